#!/usr/bin/env python3
"""A session's folder from Python (standard library only): upload a file, run a prompt whose bash
command changes it, print the run's diff, read the file back, delete the session.

    python3 examples/python/workspace.py      (Python 3.8+; run a gateway first)

PI_GATEWAY_URL and PI_GATEWAY_TOKEN as for client.py.
"""

import json
import os
import sys
import urllib.error
import urllib.parse
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


def call(method, path, body=None, content_type="application/json"):
    """One request; returns the answer's bytes, or exits with the problem+json's code and detail."""
    headers = {"Authorization": f"Bearer {TOKEN}"} if TOKEN else {}
    data = None
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        headers["Content-Type"] = content_type
    req = urllib.request.Request(BASE_URL + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req) as res:
            return res.read()
    except urllib.error.HTTPError as error:
        problem = json.loads(error.read() or b"{}")
        sys.exit(f"pi-gateway: HTTP {error.code} {problem.get('code')}: {problem.get('detail')}")


def main():
    session = json.loads(call("POST", "/v1/sessions", {"name": "workspace-example"}))
    sid = session["id"]
    try:
        file_url = f"/v1/sessions/{sid}/files/content?path=" + urllib.parse.quote("notes/todo.txt")
        call("PUT", file_url, b"buy milk\n", "application/octet-stream")
        run = json.loads(call("POST", f"/v1/sessions/{sid}/prompt?wait=60", {"message": "bash: printf 'call mum\\n' >> notes/todo.txt"}))
        changes = json.loads(call("GET", f"/v1/sessions/{sid}/changes?runId={run['runId']}"))
        for change in changes["files"]:
            print(f"{change['status']} {change['path']}\n{change['diff'] or '(no diff)'}")
        print("now:\n" + call("GET", file_url).decode(), end="")
    finally:
        call("DELETE", f"/v1/sessions/{sid}")


if __name__ == "__main__":
    main()
