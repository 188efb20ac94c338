#!/usr/bin/env bash
# Builds the image and runs it as far as this machine allows, checking what an operator would:
# it starts as the non-root user with the demo model, answers its health check, runs a prompt in a
# session folder under /data, and stops within the drain on SIGTERM. Run by hand (minutes):
#   deploy/container/smoke.sh
# The image is run with `buildah run --isolation chroot` (host network): on the machines this
# project is built on, crun cannot create a container (cgroups in hybrid mode); where
# `podman run` works, docs/deployment.md's commands are the real thing.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
port=${PORT:-18787}
base=$("$repo/deploy/container/offline-base.sh")
ctx=$(mktemp -d /var/tmp/pi-gateway-ctx.XXXXXX)
stop() {
	pid=$(pgrep -f '^node /app/bin/pi-gateway.js' || true)
	[ -n "$pid" ] && kill -TERM $pid && sleep 3
	rm -rf "$ctx"
	[ -n "${ctr:-}" ] && buildah rm "$ctr" >/dev/null 2>&1
	true
}
trap stop EXIT
git -C "$repo" archive HEAD | tar -x -C "$ctx"
secret=()
[ -n "${NODE_EXTRA_CA_CERTS:-}" ] && secret=(--secret "id=ca,src=$NODE_EXTRA_CA_CERTS")
podman build --quiet --format docker --isolation chroot --network host "${secret[@]}" --build-arg "BASE=$base" \
	-f "$ctx/deploy/container/Containerfile" -t localhost/pi-gateway:smoke "$ctx"
ctr=$(buildah from localhost/pi-gateway:smoke)
log=$(mktemp)
# The token by env: buildah run gives the image's VOLUME /data a store of its own, so the file the
# gateway makes there is not readable from here.
token=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
buildah run --isolation chroot --user pi-gateway --env "PI_GATEWAY_PORT=$port" --env "PI_GATEWAY_TOKEN=$token" "$ctr" -- \
	tini -s -- node /app/bin/pi-gateway.js >"$log" 2>&1 &
for _ in $(seq 90); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 1; done
curl -sf "http://127.0.0.1:$port/readyz" || { cat "$log"; exit 1; }
echo
# The image's own HEALTHCHECK command, run inside it.
check=$(podman image inspect localhost/pi-gateway:smoke | jq -r '.[0] | (.Healthcheck // .Config.Healthcheck).Test[-1]')
buildah run --isolation chroot --env "PI_GATEWAY_PORT=$port" "$ctr" -- node -e "$check" && echo "healthcheck: ok"
auth=(-H "Authorization: Bearer $token")
id=$(curl -sf "${auth[@]}" --json '{}' "http://127.0.0.1:$port/v1/sessions" | jq -r .id)
curl -sf "${auth[@]}" --json '{"message":"bash: echo $(id -un) in $(pwd)"}' \
	"http://127.0.0.1:$port/v1/sessions/$id/prompt?wait=60" | jq -r .text
pid=$(pgrep -f '^node /app/bin/pi-gateway.js')
kill -TERM "$pid"
for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
grep -m1 'sandbox' "$log" || true
grep -q 'pi-gateway stopped' "$log" && echo "smoke: ok (stopped on SIGTERM)"
