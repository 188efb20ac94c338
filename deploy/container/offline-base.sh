#!/usr/bin/env bash
# Assembles, without any container registry, a stand-in for node:22-bookworm-slim: Debian 12
# (mmdebstrap from Debian's own mirror) + the Node 22 binary from the npm package node@22 + npm.
# For machines that reach Debian and npm but no container registry (like the ones this project is
# tested on). Prints the image name to pass as --build-arg BASE=…
#   deploy/container/offline-base.sh [IMAGE]          (default localhost/pi-gateway-base:bookworm-node22)
set -euo pipefail
image=${1:-localhost/pi-gateway-base:bookworm-node22}
repo=$(cd "$(dirname "$0")/../.." && pwd)
. "$repo/scripts/node22.sh" >/dev/null
work=$(mktemp -d /var/tmp/pi-gateway-base.XXXXXX)
trap 'rm -rf "$work"' EXIT
# ROOTFS=file.tar reuses a root file system made before by the same mmdebstrap call.
rootfs=${ROOTFS:-$work/rootfs.tar}
[ -f "$rootfs" ] || mmdebstrap --quiet --variant=minbase --include=ca-certificates bookworm "$rootfs" http://deb.debian.org/debian
podman import --quiet "$rootfs" localhost/pi-gateway-debian:bookworm >/dev/null
node_bin=$(command -v node)
npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
mkdir -p "$work/ctx"
cp "$node_bin" "$work/ctx/node"
cp -r "$npm_dir" "$work/ctx/npm"
cat > "$work/ctx/Containerfile" <<'CF'
FROM localhost/pi-gateway-debian:bookworm
COPY node /usr/local/bin/node
COPY npm /usr/local/lib/node_modules/npm
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
	&& ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
	&& node -v && npm -v
CF
podman build --quiet --isolation chroot --network host -t "$image" "$work/ctx" >/dev/null
echo "$image"
