#!/usr/bin/env bash
# Runs the built image as an operator would and checks what matters: it starts as uid 10001 with
# the demo model and the sandbox on (bubblewrap inside the container), answers its own health
# check, runs a prompt in a session folder under /data whose files belong to 10001:10001, and stops
# within the drain on SIGTERM. By hand (a minute or two; root, podman):
#   deploy/container/build.sh && deploy/container/smoke.sh [IMAGE]   (default localhost/pi-gateway:latest)
# podman run is tried as docs/deployment.md shows it, then with what this project's machines need
# (their root may not raise rlimits, so they are lowered; their cgroups are hybrid, which crun
# refuses and runc takes). Where no way runs a container, it says so and stops: buildah's chroot
# isolation cannot stand in, since a chrooted process may not make the user namespace bwrap needs.
set -euo pipefail
image=${1:-localhost/pi-gateway:latest}
port=${PORT:-18787}
name=pi-gateway-smoke-$$
volume=$name-data
say() { echo "smoke: $*" >&2; }
command -v podman >/dev/null || { say "MISSING: podman (apt-get install podman)"; exit 1; }
podman image exists "$image" || { say "MISSING: the image $image (deploy/container/build.sh builds it)"; exit 1; }
cleanup() {
	podman rm -f "$name" >/dev/null 2>&1 || true
	podman volume rm -f "$volume" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# The first way of running a container that works here.
lowered=(--ulimit nofile=4096:4096 --ulimit nproc=4096:4096)
ways=("" "${lowered[*]}")
command -v runc >/dev/null && ways+=("--runtime runc ${lowered[*]}")
how=""
found=false
for way in "${ways[@]}"; do
	# shellcheck disable=SC2086
	if podman run --rm $way --entrypoint /bin/true "$image" >/dev/null 2>&1; then
		how=$way found=true
		break
	fi
done
if [ "$found" = false ]; then
	say "no way to run a container here (tried: podman run, with rlimits lowered, with runc): $(podman run --rm --entrypoint /bin/true "$image" 2>&1 | tail -1)"
	exit 1
fi
say "running with: podman run ${how:-(defaults)} and the sandbox's options"

# As docs/deployment.md runs it, on the host network at a loopback port of its own.
token=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
# shellcheck disable=SC2086
podman run -d --name "$name" $how --network host -v "$volume:/data" \
	--security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt systempaths=unconfined \
	--env PI_GATEWAY_HOST=127.0.0.1 --env "PI_GATEWAY_PORT=$port" --env "PI_GATEWAY_TOKEN=$token" "$image" >/dev/null
url=http://127.0.0.1:$port
for _ in $(seq 90); do curl -sf "$url/readyz" >/dev/null && break; sleep 1; done
curl -sf "$url/readyz" >/dev/null || {
	podman logs "$name" 2>&1 | tail -20
	say "FAILED: /readyz never answered 200"
	exit 1
}
say "ready: $(curl -s "$url/readyz")"
auth=(-H "Authorization: Bearer $token")
sandbox=$(curl -sf "${auth[@]}" "$url/v1/info" | jq -r .sandbox.state)
[ "$sandbox" = sandboxed ] || { say "FAILED: the sandbox is $sandbox"; exit 1; }
say "sandbox: $sandbox (bubblewrap runs each pi inside the container)"
# /docs serves the Swagger UI the image keeps.
curl -sf -o /dev/null "$url/docs/swagger-ui-bundle.js" && say "/docs: ok"
# The image's own HEALTHCHECK command, run inside it.
check=$(podman image inspect "$image" | jq -r '.[0] | (.Healthcheck // .Config.Healthcheck).Test[-1]')
podman exec "$name" node -e "$check" && say "healthcheck: ok"
id=$(curl -sf "${auth[@]}" --json '{}' "$url/v1/sessions" | jq -r .id)
answer=$(curl -sf "${auth[@]}" --json '{"message":"bash: echo smoke-mark > note.txt; echo $(id -un) in $(pwd)"}' "$url/v1/sessions/$id/prompt?wait=60" | jq -r .text)
say "prompt: $answer"
case $answer in *pi-gateway*/data/workspaces/*) ;; *)
	say "FAILED: the prompt did not run as pi-gateway under /data/workspaces"
	exit 1
	;;
esac
# What changed (git on a shadow repository) and search (ripgrep) see the file the agent wrote.
curl -sf "${auth[@]}" "$url/v1/sessions/$id/changes" | jq -e 'tostring | contains("note.txt")' >/dev/null &&
	say "changes (git): note.txt" || { say "FAILED: /changes does not list note.txt"; exit 1; }
curl -sf "${auth[@]}" "$url/v1/sessions/$id/files/search?q=smoke-mark" | jq -e 'tostring | contains("note.txt")' >/dev/null &&
	say "search (ripgrep): note.txt" || { say "FAILED: search does not find note.txt"; exit 1; }
owner=$(podman exec "$name" stat -c '%u:%g' "/data/workspaces/$id" 2>/dev/null || podman exec "$name" sh -c "stat -c '%u:%g' /data/workspaces/*/$id 2>/dev/null || stat -c '%u:%g' /data/workspaces")
say "session folder owner: $owner"
[ "$owner" = 10001:10001 ] || { say "FAILED: expected 10001:10001"; exit 1; }
start=$(date +%s)
podman stop --time 45 "$name" >/dev/null
podman logs "$name" 2>&1 | grep -q 'pi-gateway stopped' || {
	podman logs "$name" 2>&1 | tail -5
	say "FAILED: no clean stop in the log"
	exit 1
}
say "ok: stopped on SIGTERM after the drain in $(($(date +%s) - start)) s"
