#!/usr/bin/env bash
# README's first command, before `npm start`: Node 22, the locked runtime dependencies, a sandbox that
# holds and a built console. It ends ready to start sandboxed, or with a stop that names the one
# command to run (fail closed: no agent runs unconfined unless the operator says --sandbox off).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/node22.sh
# What running needs, no development tool (the tests' path, .ci/run, installs them all: npm ci).
npm ci --omit=dev --no-audit --no-fund
bash scripts/ensure-sandbox.sh
# The console (/console) is served from dist/console: built once here (its build tools, which are
# devDependencies, outside node_modules: scripts/build-console.sh).
[ -f dist/console/index.html ] || bash scripts/build-console.sh
echo "pi-gateway: set up; \`npm start\` runs the gateway (sandboxed, console at /console)" >&2
