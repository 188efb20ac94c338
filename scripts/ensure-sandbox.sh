#!/usr/bin/env bash
# Makes sure the sandbox each agent runs in holds here (scripts/setup.sh, README's first command):
# exit 0 when it does (installing bubblewrap with apt-get when root), else a stop that names the
# one command to run.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/node22.sh
node scripts/sandbox-check.ts 2>/dev/null && exit 0
if ! command -v bwrap >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "pi-gateway: installing bubblewrap, the sandbox each agent runs in (apt-get install bubblewrap)" >&2
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null
	else
		install="sudo apt-get install -y bubblewrap"
		command -v apt-get >/dev/null 2>&1 ||
			install="install the package bubblewrap with your system's package manager"
		echo "pi-gateway: stopped: bubblewrap (bwrap), the sandbox each agent runs in, is not installed." >&2
		echo "  Run:  $install" >&2
		echo "  then this command again. (To run agents unconfined as your user instead: npm start -- --sandbox off)" >&2
		exit 1
	fi
fi
if ! node scripts/sandbox-check.ts; then
	echo "pi-gateway: stopped: bubblewrap cannot confine an agent here (the reason is above)." >&2
	echo "  docs/security.md (\"Sandbox\") says what it needs: Linux, bwrap 0.8+, user namespaces." >&2
	echo "  To run agents unconfined as your user instead: npm start -- --sandbox off" >&2
	exit 1
fi
