#!/usr/bin/env python3
"""pi-gateway from Python with the standard library only (urllib and a small SSE reader).

Creates a session, streams a prompt whose bash command a gate extension must approve, approves
it when the dialog shows up in the stream, prints the reply as it streams, deletes the session.

    python3 examples/python/client.py      (Python 3.8+; run a gateway first, see the README)

PI_GATEWAY_URL    the gateway (default http://127.0.0.1:8787)
PI_GATEWAY_TOKEN  its bearer token; when unset, read from the file the gateway keeps it in,
                  $PI_GATEWAY_DATA_DIR/token (default ~/.pi-gateway/token)
PI_GATEWAY_GATE   the allow-list name of the extension that asks before `rm -rf` (default permission-gate)
"""

import json
import os
import re
import sys
import urllib.error
import urllib.request

BASE_URL = os.environ.get("PI_GATEWAY_URL", "http://127.0.0.1:8787").rstrip("/")
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


class ApiError(Exception):
    """An RFC 9457 problem+json answer: status, code and detail."""

    def __init__(self, status, problem):
        super().__init__(f"HTTP {status} {problem.get('code')}: {problem.get('detail')}")
        self.status = status
        self.problem = problem


def request(method, path, body=None, accept="application/json"):
    """Sends one request; returns the open response (the caller reads it) or raises ApiError."""
    headers = {"Accept": accept}
    if TOKEN:
        headers["Authorization"] = f"Bearer {TOKEN}"
    data = None
    if body is not None:
        headers["Content-Type"] = "application/json"
        data = json.dumps(body).encode()
    req = urllib.request.Request(BASE_URL + path, data=data, method=method, headers=headers)
    try:
        return urllib.request.urlopen(req, timeout=120)
    except urllib.error.HTTPError as error:
        text = error.read().decode() or "{}"
        problem = json.loads(text) if text.startswith("{") else {"detail": text}
        raise ApiError(error.code, problem) from None


def call(method, path, body=None):
    """A JSON request and its decoded JSON answer (None for 204)."""
    with request(method, path, body) as response:
        text = response.read().decode()
        return json.loads(text) if text else None


def events(response):
    """Server-Sent Events: yields the decoded `data:` of each frame; comments and heartbeats skipped."""
    data = []
    for raw in response:
        line = raw.decode("utf-8").rstrip("\r\n")
        if line == "":
            if data:
                yield json.loads("\n".join(data))
            data = []
        elif line.startswith("data:"):
            data.append(re.sub(r"^ ", "", line[5:]))


def decide(approval):
    """This example approves; a real client would ask a person (the approval says what and why)."""
    if approval["method"] == "confirm":
        return {"confirmed": True, "by": "python-example"}
    options = approval.get("options") or []
    allow = next((o for o in options if re.search(r"allow|yes", o, re.I)), options[0] if options else None)
    if allow is None:
        return {"cancelled": True, "by": "python-example"}
    return {"value": allow, "by": "python-example"}


def answer(session_id, approval):
    message = approval.get("message") or ""
    print(f"approval requested ({approval['method']}): {approval['title']} {message}".rstrip())
    resolved = call("POST", f"/v1/sessions/{session_id}/approvals/{approval['id']}", decide(approval))
    print(f"approval {resolved['status']}: {json.dumps(resolved['answer'], separators=(',', ':'))}")


def main():
    session = call("POST", "/v1/sessions", {"name": "python-example", "extensions": [GATE]})
    session_id = session["id"]
    print(f"session {session_id} is {session['status']} (model {(session.get('model') or {}).get('id')})")
    try:
        print(f"> {PROMPT}")
        stream = request("POST", f"/v1/sessions/{session_id}/prompt", {"message": PROMPT}, "text/event-stream")
        with stream:
            for event in events(stream):
                kind = event["type"]
                if kind == "approval_requested":
                    answer(session_id, event["approval"])
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
        with request("DELETE", f"/v1/sessions/{session_id}") as response:
            print(f"session {session_id} deleted (HTTP {response.status})")


if __name__ == "__main__":
    try:
        main()
    except ApiError as error:
        print(f"pi-gateway: {error}", file=sys.stderr)
        sys.exit(1)
