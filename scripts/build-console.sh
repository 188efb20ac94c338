#!/usr/bin/env bash
# Builds the console (dist/console) in a checkout that holds only what running needs
# (`npm ci --omit=dev`, README's first command). Its build tools are devDependencies: vite, and
# preact, marked, lowlight, dompurify and diff, which the build bundles into dist/console (nothing of
# them runs in the gateway). They are installed at the versions package.json pins into a folder of
# their own outside the repo (~/.cache/pi-gateway/console-tools/<versions>, once), linked into
# node_modules for the build and unlinked after, so node_modules ends as it began. With the full
# install (`npm ci`, the test path) the build runs as `npm run build:console` does.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -x node_modules/.bin/vite ]; then
	exec npm run -s build:console
fi
tools=(vite preact marked lowlight dompurify diff)
specs=$(node -e 'const d = require("./package.json").devDependencies; console.log(process.argv.slice(1).map((n) => `${n}@${d[n]}`).join(" "))' "${tools[@]}")
dir="${PI_GATEWAY_CONSOLE_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pi-gateway/console-tools/$(echo "$specs" | sha256sum | cut -c1-12)}"
if [ ! -x "$dir/node_modules/.bin/vite" ]; then
	echo "pi-gateway: installing the console's build tools ($specs) into $dir" >&2
	mkdir -p "$dir"
	# shellcheck disable=SC2086
	npm install --prefix "$dir" --no-audit --no-fund --loglevel=error $specs >&2
fi
linked=()
unlink_all() {
	for link in "${linked[@]}"; do rm -f "$link"; done
	for scope in node_modules/@*/; do rmdir "$scope" 2>/dev/null || true; done
}
trap unlink_all EXIT
for entry in "$dir"/node_modules/*; do
	name=$(basename "$entry")
	case "$name" in .bin | .package-lock.json) continue ;; esac
	if [[ "$name" == @* ]]; then
		for scoped in "$entry"/*; do
			target="node_modules/$name/$(basename "$scoped")"
			[ -e "$target" ] && continue
			mkdir -p "node_modules/$name"
			ln -s "$scoped" "$target"
			linked+=("$target")
		done
	elif [ ! -e "node_modules/$name" ]; then
		ln -s "$entry" "node_modules/$name"
		linked+=("node_modules/$name")
	fi
done
"$dir/node_modules/.bin/vite" build -c console/vite.config.ts
