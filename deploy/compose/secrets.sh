#!/usr/bin/env bash
# Makes the secret files compose.yaml mounts, once, in ./secrets beside it: PostgreSQL's password,
# the database URL that carries it, the cluster secret and the admin token. Compose mounts a
# secret file as it is on the host (owner and mode included), so the gateway's three are given to
# uid 10001 (the image's user) with mode 0400, and PostgreSQL's password stays root's (its image
# reads it as root before it drops to its own user); ./keys, for the principals' keys file, is the
# gateway's. Run as root (sudo), from any folder.
# An existing file is kept: running it again changes nothing.
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)/secrets
if [ "$(id -u)" != 0 ]; then
	echo "secrets.sh: run as root (sudo $0): the files must belong to uid 10001, the gateway's user in the image" >&2
	exit 1
fi
command -v openssl >/dev/null || {
	echo "secrets.sh: openssl is missing (apt-get install openssl)" >&2
	exit 1
}
umask 077
mkdir -p "$dir"
make() { [ -s "$dir/$1" ] || printf '%s\n' "$2" >"$dir/$1"; }
make postgres-password "$(openssl rand -hex 24)"
make database-url "postgres://pi:$(cat "$dir/postgres-password")@postgres:5432/pi_gateway"
make cluster-secret "$(openssl rand -base64 32)"
make token "$(openssl rand -hex 32)"
chown 10001:10001 "$dir/database-url" "$dir/cluster-secret" "$dir/token"
chmod 0400 "$dir"/*
chmod 0711 "$dir"
# The nodes' one keys file lives in ./keys, which the gateway (uid 10001) writes with `keys create`.
keys=$(dirname "$dir")/keys
mkdir -p "$keys" && chown 10001:10001 "$keys" && chmod 0700 "$keys"
echo "secrets.sh: $dir holds database-url, cluster-secret, token (uid 10001) and postgres-password (root); $keys is the gateway's"
