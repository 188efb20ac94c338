#!/usr/bin/env bash
# README's first command, before `npm start`: Node 22, the locked dependencies, a sandbox that
# holds and a built console. It ends ready to start sandboxed, or with a stop that names the one
# command to run (fail closed: no agent runs unconfined unless the operator says --sandbox off).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/node22.sh
npm ci --no-audit --no-fund
bash scripts/ensure-sandbox.sh
# The console (/console) is served from dist/console: built once here.
[ -f dist/console/index.html ] || npm run -s build:console
echo "pi-gateway: set up; \`npm start\` runs the gateway (sandboxed, console at /console)" >&2
