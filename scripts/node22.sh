# Source this file: puts a Node >= 22.19 first on PATH, fetching the npm package `node@22`
# into a cache folder outside the repo when the machine's node is older. Never touches the
# system's node.
_pi_gw_node_ok() {
	command -v node >/dev/null 2>&1 &&
		node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>22||(a===22&&b>=19)?0:1)'
}
if ! _pi_gw_node_ok; then
	_pi_gw_dir="${PI_GATEWAY_NODE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pi-gateway/node22}"
	if [ ! -x "$_pi_gw_dir/node_modules/.bin/node" ]; then
		echo "pi-gateway: Node >= 22.19 needed; installing node@22.23.3 into $_pi_gw_dir" >&2
		mkdir -p "$_pi_gw_dir"
		# node@22 puts its binary in place with a preinstall script: allowed by name, so npm 11 lists
		# nothing to review and npm 12, which runs no unlisted install script, still installs a node.
		[ -f "$_pi_gw_dir/package.json" ] || printf '{"private":true,"allowScripts":{"node":true}}\n' >"$_pi_gw_dir/package.json"
		npm install --prefix "$_pi_gw_dir" --no-audit --no-fund --loglevel=error node@22.23.3 >&2
	fi
	export PATH="$_pi_gw_dir/node_modules/.bin:$PATH"
	unset _pi_gw_dir
fi
unset -f _pi_gw_node_ok
