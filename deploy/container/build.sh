#!/usr/bin/env bash
# Builds the pi-gateway image from this checkout with buildah, handling what a machine like this
# project's lacks, and saying what is missing when it cannot:
#   - the base images: docker.io's node:22-bookworm-slim and debian:bookworm-slim when they are
#     here or can be pulled, else offline-base.sh's stand-ins (Debian's mirror and npm's node@22);
#   - the CA: the machine's extra CA for npm (NODE_EXTRA_CA_CERTS, else npm's cafile) goes in as a
#     build secret, used by npm ci and never stored in a layer;
#   - the isolation: buildah's default runtime (crun/runc) when it can run a container here, else
#     --isolation chroot;
#   - no dangling stage: --layers=false, and any untagged image the build left is removed.
# In a git checkout it builds the last commit (git archive HEAD): edits not committed, yours or a
# tool's, are not baked in; --worktree builds the folder as it is (.containerignore applies).
# Usage: deploy/container/build.sh [--check] [--offline] [--worktree] [--tag NAME]
#   --check    says what a build would use and what is missing, builds nothing (exit 1 if missing)
#   --offline  never pulls: the official bases if already here, else offline-base.sh's
#   --tag      the image's name (default localhost/pi-gateway:latest, the name Compose uses)
# BASE=… RUNTIME_BASE=… in the environment name the two base images outright.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
containerfile=$repo/deploy/container/Containerfile
tag=localhost/pi-gateway:latest
check=false
offline=false
worktree=false
while [ $# -gt 0 ]; do
	case $1 in
	--check) check=true ;;
	--offline) offline=true ;;
	--worktree) worktree=true ;;
	--tag) tag=${2:?--tag needs a name}; shift ;;
	-h | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "build.sh: unknown argument $1 (--check, --offline, --worktree, --tag NAME)" >&2; exit 2 ;;
	esac
	shift
done
official_base=docker.io/library/node:22-bookworm-slim
official_runtime=docker.io/library/debian:bookworm-slim
missing=()
say() { echo "build.sh: $*" >&2; }
need() { # need COMMAND WHY HOW
	if command -v "$1" >/dev/null 2>&1; then say "ok: $1 ($2)"; else
		say "MISSING: $1 ($2): $3"
		missing+=("$1")
	fi
}

# What every build needs.
need buildah "builds the image" "apt-get install buildah"
[ -f "$containerfile" ] || { say "MISSING: $containerfile"; missing+=(Containerfile); }
for stage in 'FROM ${BASE} AS build' 'FROM ${RUNTIME_BASE}'; do
	grep -qxF "$stage" "$containerfile" 2>/dev/null || { say "MISSING in the Containerfile: $stage"; missing+=(stage); }
done
have_image() { command -v buildah >/dev/null 2>&1 && buildah inspect --type image "$1" >/dev/null 2>&1; }

# The bases: named, official and here, pulled, or assembled offline.
base=${BASE:-}
runtime=${RUNTIME_BASE:-}
offline_base=false
if [ -n "$base" ] && [ -n "$runtime" ]; then
	say "ok: bases named: BASE=$base RUNTIME_BASE=$runtime"
elif have_image "$official_base" && have_image "$official_runtime"; then
	base=$official_base runtime=$official_runtime
	say "ok: bases here: $base, $runtime"
elif [ "$offline" = true ]; then
	offline_base=true
elif [ "$check" = true ]; then
	say "the official bases are not here: a build pulls them, or assembles the offline ones when no registry answers (--offline: at once)"
	offline_base=true
else
	say "pulling $official_base and $official_runtime (--offline skips this)…"
	if timeout 120 buildah pull --quiet "$official_base" >/dev/null && timeout 120 buildah pull --quiet "$official_runtime" >/dev/null; then
		base=$official_base runtime=$official_runtime
	else
		say "no container registry answered: assembling the bases offline (deploy/container/offline-base.sh)"
		offline_base=true
	fi
fi
if [ "$offline_base" = true ]; then
	if have_image localhost/pi-gateway-base:bookworm-node22 && have_image localhost/pi-gateway-debian:bookworm-slim; then
		say "ok: offline bases here (localhost/pi-gateway-base:bookworm-node22, localhost/pi-gateway-debian:bookworm-slim)"
	else
		say "the offline bases are not here yet: offline-base.sh will make them (Debian's mirror and npm reached)"
		need mmdebstrap "assembles Debian 12 for the offline bases" "apt-get install mmdebstrap"
		[ "$(id -u)" = 0 ] || { say "MISSING: root (offline-base.sh runs mmdebstrap and buildah mount)"; missing+=(root); }
	fi
fi

# The CA npm needs behind a TLS-inspecting proxy: the one this machine's npm and node use.
ca=${NODE_EXTRA_CA_CERTS:-}
if [ -z "$ca" ] && command -v npm >/dev/null 2>&1; then
	ca=$(npm config get cafile 2>/dev/null || true)
	[ "$ca" = null ] || [ "$ca" = undefined ] && ca=""
fi
secret=()
if [ -z "$ca" ]; then
	say "ok: no extra CA (neither NODE_EXTRA_CA_CERTS nor npm's cafile is set): npm ci trusts Debian's CAs"
elif [ -r "$ca" ]; then
	secret=(--secret "id=ca,src=$ca")
	say "ok: CA for npm ci: $ca (a build secret, not kept in the image)"
else
	say "MISSING: the CA file $ca (named by NODE_EXTRA_CA_CERTS or npm's cafile) cannot be read"
	missing+=(ca)
fi

if [ ${#missing[@]} -gt 0 ]; then
	say "cannot build: missing ${missing[*]}"
	exit 1
fi
if [ "$check" = true ]; then
	what=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo "none: the folder as it is")
	[ "$worktree" = false ] || what="the folder as it is"
	say "isolation: decided when building (buildah's default runtime if it runs a container here, else --isolation chroot)"
	say "check done: a build would run buildah build --format docker --layers=false ${secret[*]} -t $tag (commit: $what)"
	exit 0
fi

start=$(date +%s)
ctx=$repo
if [ "$worktree" = false ] && git -C "$repo" rev-parse --git-dir >/dev/null 2>&1; then
	ctx=$(mktemp -d /var/tmp/pi-gateway-ctx.XXXXXX)
	trap 'rm -rf "$ctx"' EXIT
	git -C "$repo" archive HEAD | tar -x -C "$ctx"
	changed=$(git -C "$repo" status --porcelain | wc -l)
	say "building commit $(git -C "$repo" rev-parse --short HEAD)$([ "$changed" = 0 ] || echo ", without the $changed changed or new files of the checkout (--worktree builds them)")"
fi
if [ "$offline_base" = true ]; then
	eval "$("$repo/deploy/container/offline-base.sh" | sed 's/^/export /')"
	base=$BASE runtime=$RUNTIME_BASE
fi

# The isolation: a container of the base running `true` with buildah's default runtime, else chroot.
probe=$(buildah from --pull=never --quiet "$base")
isolation=()
if buildah run "$probe" -- true >/dev/null 2>&1; then
	say "ok: isolation: buildah's default runtime runs containers here"
elif buildah run --isolation chroot "$probe" -- true >/dev/null 2>&1; then
	isolation=(--isolation chroot)
	say "ok: isolation: chroot (buildah's default runtime cannot run a container here)"
else
	buildah rm "$probe" >/dev/null
	say "MISSING: a way to run build steps: neither buildah's runtime nor --isolation chroot ran 'true' in $base"
	exit 1
fi
buildah rm "$probe" >/dev/null

dangling() { buildah images --filter dangling=true --format '{{.ID}}' 2>/dev/null | sort; }
before=$(dangling)
buildah build --format docker --layers=false "${isolation[@]}" --network host "${secret[@]}" \
	--build-arg "BASE=$base" --build-arg "RUNTIME_BASE=$runtime" \
	-f "$ctx/deploy/container/Containerfile" -t "$tag" "$ctx"
# Whatever the build left untagged (an earlier build's image under the same tag included) goes.
for id in $(comm -13 <(echo "$before") <(dangling)); do buildah rmi "$id" >/dev/null 2>&1 || true; done

user=$(buildah inspect --type image --format '{{.OCIv1.Config.User}}' "$tag")
size=$(buildah images --format '{{.Size}}' "$tag" | head -1)
say "built $tag: $size, user $user, in $(($(date +%s) - start)) s"
