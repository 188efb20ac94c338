#!/usr/bin/env bash
# The examples of docs/webhooks.md, docs/idempotency.md and docs/policies.md as one script; the test
# suite runs it against a live gateway (test/e2e/unattended-curl.test.ts) and checks that every
# curl line of those pages is in here.
#
#   npm start -- --webhook-allow loopback &
#   RECEIVER=http://127.0.0.1:9000/hook examples/curl/unattended.sh
#
# PI_GATEWAY_URL / PI_GATEWAY_TOKEN / PI_GATEWAY_DATA_DIR as in walkthrough.sh; RECEIVER is a URL
# that answers 2xx to POSTs (the test runs one). Needs curl 7.82+ (--json) and jq.
set -euo pipefail

GW=${PI_GATEWAY_URL:-http://127.0.0.1:8787}
TOKEN_FILE=${PI_GATEWAY_DATA_DIR:-${HOME:-~}/.pi-gateway}/token
AUTH="Authorization: Bearer ${PI_GATEWAY_TOKEN:-$(cat "$TOKEN_FILE" 2>/dev/null || true)}"
RECEIVER=${RECEIVER:?set RECEIVER to a URL that accepts webhook POSTs}
say() { printf '# %s\n' "$*"; }

say "Webhooks: subscribe; the secret (whsec_…) is in this answer only"
HOOK=$(curl -s -H "$AUTH" --json '{"url":"'$RECEIVER'","events":["approval.requested","approval.resolved","run.settled"]}' $GW/v1/webhooks)
HID=$(echo "$HOOK" | jq -r .id)
SECRET=$(echo "$HOOK" | jq -r .secret)
echo "$SECRET" | grep -q '^whsec_'
curl -s -H "$AUTH" $GW/v1/webhooks | jq -e -c '.webhooks[] | {id, url, events}'

say "Approval policies: a session whose rule allows one command with nobody watching"
ID=$(curl -s -H "$AUTH" --json '{"extensions":["permission-gate"],"policies":{"rules":[{"name":"scratch-ok","match":{"method":["select"],"title":"Allow this bash command\\?\\s+rm -rf \\./scratch"},"action":"allow"}],"unanswered":{"afterMs":60000,"action":"deny"}}}' $GW/v1/sessions | jq -r .id)

say "Idempotency: the same key twice runs the prompt once; the second answer is the first one, replayed"
KEY=$(cat /proc/sys/kernel/random/uuid)
curl -s -H "$AUTH" -H "Idempotency-Key: $KEY" --json '{"message":"bash: rm -rf ./scratch"}' "$GW/v1/sessions/$ID/prompt?wait=true" | jq -e -c '{stopReason}'
curl -si -H "$AUTH" -H "Idempotency-Key: $KEY" --json '{"message":"bash: rm -rf ./scratch"}' "$GW/v1/sessions/$ID/prompt?wait=true" | grep -i '^idempotent-replayed: true'
curl -s -H "$AUTH" -H "Idempotency-Key: $KEY" --json '{"message":"something else"}' "$GW/v1/sessions/$ID/prompt?wait=true" | jq -e -c '{status, code}'

say "History: who answered what, also after a restart"
curl -s -H "$AUTH" "$GW/v1/approvals/history?status=answered&sessionId=$ID" | jq -e -c '.approvals[] | {resolvedBy, answer}'

say "The webhook's delivery log (signed requested → resolved → settled)"
for i in $(seq 300); do curl -s -H "$AUTH" $GW/v1/webhooks/$HID/deliveries | jq -e '(.deliveries[0].state // "pending") != "pending"' >/dev/null && break; sleep 0.2; done
for _ in $(seq 100); do
	[ "$(curl -s -H "$AUTH" $GW/v1/webhooks/$HID/deliveries | jq '[.deliveries[] | select(.state == "delivered")] | length')" -ge 3 ] && break
	sleep 0.1
done
curl -s -H "$AUTH" $GW/v1/webhooks/$HID/deliveries | jq -e -c '.deliveries[] | {type, state, status: .log[-1].status}'
curl -s -o /dev/null -w '%{http_code}\n' -H "$AUTH" -X DELETE $GW/v1/webhooks/$HID
