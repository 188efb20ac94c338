#!/usr/bin/env python3
"""pi-gateway from Python through the first-party client (clients/python, standard library only).

Creates a session, streams a prompt whose bash command a gate extension must approve, approves
it when the dialog shows up in the stream, prints the reply as it streams, deletes the session.
The stream resumes by itself with Last-Event-ID if the connection breaks.

    python3 examples/python/client.py      (Python 3.9+; run a gateway first, see the README)

Uses the installed package (pip install ./clients/python), else the copy in this repository.

PI_GATEWAY_URL    the gateway (default http://127.0.0.1:8787)
PI_GATEWAY_TOKEN  its bearer token; when unset, read from the file the gateway keeps it in,
                  $PI_GATEWAY_DATA_DIR/token (default ~/.pi-gateway/token)
PI_GATEWAY_GATE   the allow-list name of the extension that asks before `rm -rf` (default permission-gate)
"""

import json
import os
import re
import sys

try:
    from pi_gateway import GatewayError, PiGateway
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python", "src"))
    from pi_gateway import GatewayError, PiGateway

BASE_URL = os.environ.get("PI_GATEWAY_URL", "http://127.0.0.1:8787")


def read_token_file():
    data_dir = os.environ.get("PI_GATEWAY_DATA_DIR") or os.path.join(os.path.expanduser("~"), ".pi-gateway")
    try:
        with open(os.path.join(data_dir, "token"), encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return None


TOKEN = os.environ.get("PI_GATEWAY_TOKEN") or read_token_file()
GATE = os.environ.get("PI_GATEWAY_GATE", "permission-gate")
PROMPT = "bash: rm -rf ./pi-gateway-scratch && echo removed"

gw = PiGateway(BASE_URL, TOKEN)


def decide(approval):
    """This example approves; a real client would ask a person (the approval says what and why)."""
    if approval["method"] == "confirm":
        return {"confirmed": True, "by": "python-example"}
    options = approval.get("options") or []
    allow = next((o for o in options if re.search(r"allow|yes", o, re.I)), options[0] if options else None)
    if allow is None:
        return {"cancelled": True, "by": "python-example"}
    return {"value": allow, "by": "python-example"}


def answer(approval):
    message = approval.get("message") or ""
    print(f"approval requested ({approval['method']}): {approval['title']} {message}".rstrip())
    resolved = gw.approvals.answer(approval, decide(approval))
    print(f"approval {resolved['status']}: {json.dumps(resolved['answer'], separators=(',', ':'))}")


def main():
    session = gw.create_session({"name": "python-example", "extensions": [GATE]})
    session_id = session["id"]
    print(f"session {session_id} is {session['status']} (model {(session.get('model') or {}).get('id')})")
    try:
        print(f"> {PROMPT}")
        for event in gw.prompt_stream(session_id, PROMPT):
            kind = event["type"]
            if kind == "approval_requested":
                answer(event["approval"])
            elif kind == "tool_execution_end":
                print(f"tool {event['toolName']} finished")
            elif kind == "message_update":
                update = event["assistantMessageEvent"]
                if update["type"] == "text_start":
                    print("assistant: ", end="", flush=True)
                elif update["type"] == "text_delta":
                    print(update["delta"], end="", flush=True)
                elif update["type"] == "text_end":
                    print()
            elif kind == "agent_settled":
                print(f"run settled (aborted: {str(event['aborted']).lower()})")
    finally:
        res = gw.raw("DELETE", "/v1/sessions/{id}", path_params={"id": session_id})
        res.read()
        print(f"session {session_id} deleted (HTTP {res.status})")


if __name__ == "__main__":
    try:
        main()
    except GatewayError as error:
        print(f"pi-gateway: {error}", file=sys.stderr)
        sys.exit(1)
