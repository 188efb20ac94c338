#!/usr/bin/env bash
# Assembles, without any container registry, stand-ins for the two images the Containerfile starts
# from: Debian 12 "slim" (mmdebstrap from Debian's own mirror; docs, man pages and locales left out
# as in debian:bookworm-slim) for the runtime stage, and that plus the Node 22 binary from the npm
# package node@22 and npm for the build stage. For machines that reach Debian and npm but no
# container registry (like the ones this project is tested on). build.sh runs it when it has to;
# it prints the two build arguments:
#   deploy/container/offline-base.sh        → BASE=localhost/pi-gateway-base:bookworm-node22
#                                             RUNTIME_BASE=localhost/pi-gateway-debian:bookworm-slim
# Images already there are kept (REBUILD=1 makes them again). ROOTFS=file.tar reuses a root file
# system made before by the same mmdebstrap call. Needs root, buildah and mmdebstrap.
set -euo pipefail
debian=localhost/pi-gateway-debian:bookworm-slim
base=localhost/pi-gateway-base:bookworm-node22
repo=$(cd "$(dirname "$0")/../.." && pwd)
. "$repo/scripts/node22.sh" >/dev/null
has() { [ -z "${REBUILD:-}" ] && buildah inspect --type image "$1" >/dev/null 2>&1; }
work=$(mktemp -d /var/tmp/pi-gateway-base.XXXXXX)
ctr=""
trap 'rm -rf "$work"; [ -z "$ctr" ] || buildah rm "$ctr" >/dev/null 2>&1 || true' EXIT
if ! has "$debian"; then
	rootfs=${ROOTFS:-$work/rootfs.tar}
	# The path excludes are written into the image's /etc/dpkg too, so the runtime stage's
	# apt-get install leaves the same out. The merged-usr hook makes /usr merged as Debian's own
	# images are, without the usrmerge package (which would bring perl).
	[ -f "$rootfs" ] || mmdebstrap --quiet --variant=minbase --include=ca-certificates \
		--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
		--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
		--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
		--dpkgopt='path-exclude=/usr/share/lintian/*' \
		bookworm "$rootfs" http://deb.debian.org/debian
	ctr=$(buildah from scratch)
	buildah add --quiet "$ctr" "$rootfs" / >/dev/null # a local tar archive is unpacked
	buildah config --cmd /bin/bash "$ctr"
	buildah commit --quiet --rm "$ctr" "$debian" >/dev/null
	ctr=""
fi
if ! has "$base"; then
	node_bin=$(command -v node)
	npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
	ctr=$(buildah from "$debian")
	buildah copy --quiet "$ctr" "$(readlink -f "$node_bin")" /usr/local/bin/node >/dev/null
	buildah copy --quiet "$ctr" "$npm_dir" /usr/local/lib/node_modules/npm >/dev/null
	mnt=$(buildah mount "$ctr")
	ln -s ../lib/node_modules/npm/bin/npm-cli.js "$mnt/usr/local/bin/npm"
	ln -s ../lib/node_modules/npm/bin/npx-cli.js "$mnt/usr/local/bin/npx"
	buildah umount "$ctr" >/dev/null
	buildah commit --quiet --rm "$ctr" "$base" >/dev/null
	ctr=""
fi
echo "BASE=$base"
echo "RUNTIME_BASE=$debian"
