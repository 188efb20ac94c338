#!/usr/bin/env bash
# The README's curl walkthrough as a script: each step prints its command as written, then runs it.
# The test suite runs it against a live gateway and compares the output with walkthrough.txt, so
# the README (which shows that transcript) cannot drift from what the gateway does.
#
#   npm start &   # the demo model, no API key; the permission gate is always on the allow-list
#   examples/curl/walkthrough.sh
#
# PI_GATEWAY_URL       the gateway (default http://127.0.0.1:8787)
# PI_GATEWAY_TOKEN     its bearer token; when unset, read from the token file the gateway wrote at its
#                      first start: $PI_GATEWAY_DATA_DIR/token (default ~/.pi-gateway/token)
# PI_GATEWAY_GATE   the allow-list name of the extension that asks before `rm -rf` (default permission-gate, shipped in extensions/)
# Needs curl 7.82+ (--json) and jq.
set -euo pipefail

GW=${PI_GATEWAY_URL:-http://127.0.0.1:8787}
TOKEN_FILE=${PI_GATEWAY_DATA_DIR:-$HOME/.pi-gateway}/token
AUTH="Authorization: Bearer ${PI_GATEWAY_TOKEN:-$(cat "$TOKEN_FILE" 2>/dev/null || true)}"
GATE=${PI_GATEWAY_GATE:-permission-gate}
command -v jq >/dev/null || {
	echo "walkthrough.sh needs jq" >&2
	exit 2
}
cd "$(mktemp -d)" # run.sse lands here

step() {
	[ -z "${stepped:-}" ] || echo
	stepped=1
	printf '# %s\n' "$1"
}
# Reads one command from stdin, prints it (with '$GATE' shown as its value, as a reader would
# type it), then runs it.
run() {
	local command
	command=$(cat)
	printf '$ %s\n' "${command//\'\$GATE\'/$GATE}"
	eval "$command"
}

step "Is it up? (health checks need no token)"
run <<'SH'
curl -s $GW/healthz | jq -c .
SH

step "Start a session that loads the gate extension; the answer comes once pi is ready"
run <<'SH'
ID=$(curl -s -H "$AUTH" --json '{"name":"walkthrough","extensions":["'$GATE'"]}' $GW/v1/sessions | jq -r .id)
SH
run <<'SH'
curl -s -H "$AUTH" $GW/v1/sessions/$ID | jq -c '{id, name, status, model}'
SH

step "Prompt and wait for the run to settle (?wait=true, or the header Prefer: wait)"
run <<'SH'
curl -s -H "$AUTH" --json '{"message":"echo: Hello, pi!"}' "$GW/v1/sessions/$ID/prompt?wait=true" | jq -c '{disposition, stopReason, text}'
SH

step "Prompt and stream the run as Server-Sent Events; the stream ends when the run settles"
run <<'SH'
curl -sN -H "$AUTH" -H "Accept: text/event-stream" --json '{"message":"count: 3"}' $GW/v1/sessions/$ID/prompt | grep '^event:' | uniq -c
SH

step "Run a shell command in the session's folder"
run <<'SH'
curl -s -H "$AUTH" --json '{"command":"mkdir -p pi-gateway-scratch && ls -d pi-gateway-scratch"}' $GW/v1/sessions/$ID/bash | jq -c '{output, exitCode}'
SH

step "A run that needs approval: the model calls bash with rm -rf, the gate opens a dialog"
run <<'SH'
curl -sN -H "$AUTH" -H "Accept: text/event-stream" --json '{"message":"bash: rm -rf ./pi-gateway-scratch && echo removed"}' $GW/v1/sessions/$ID/prompt > run.sse &
SH
step "The approval inbox long-polls until a dialog opens"
run <<'SH'
APPROVAL=$(curl -s -H "$AUTH" "$GW/v1/approvals?status=pending&wait=10" | jq -r --arg id $ID 'first(.approvals[] | select(.sessionId == $id)) | .id')
SH
run <<'SH'
curl -s -H "$AUTH" $GW/v1/sessions/$ID/approvals/$APPROVAL | jq -c '{method, title, options, status}'
SH
run <<'SH'
curl -s -H "$AUTH" $GW/v1/sessions/$ID | jq -c '{status, pendingApprovals}'
SH
step "Answer it; pi gets the answer at once and the run goes on (by is a free-text note, kept as note; resolvedBy is the key that signed in)"
run <<'SH'
curl -s -H "$AUTH" --json '{"value":"Allow","by":"walkthrough"}' $GW/v1/sessions/$ID/approvals/$APPROVAL | jq -c '{status, answer, note, resolvedBy}'
SH
run <<'SH'
wait; grep -E '^event: (approval|tool_execution_end|agent_settled)' run.sse
SH
run <<'SH'
curl -s -H "$AUTH" $GW/v1/sessions/$ID/last-assistant-text | jq -r .text
SH
run <<'SH'
curl -s -H "$AUTH" --json '{"command":"ls pi-gateway-scratch"}' $GW/v1/sessions/$ID/bash | jq -c '{output, exitCode}'
SH

step "Metrics for Prometheus"
run <<'SH'
curl -s -H "$AUTH" $GW/metrics | grep -E '^pi_gateway_(approvals_resolved_total|commands_total)'
SH

step "Stop the session (stdin closed, then SIGTERM, then SIGKILL); errors are RFC 9457 problem+json"
run <<'SH'
curl -s -o /dev/null -w '%{http_code}\n' -H "$AUTH" -X DELETE $GW/v1/sessions/$ID
SH
run <<'SH'
curl -s -H "$AUTH" $GW/v1/sessions/$ID | jq -c '{status, code, detail}'
SH
