"""Typed events, the SDK-style helpers, and streams that raise instead of ending silently (sync).

A scripted server plays a gateway that closes a run's stream before its end; the live cases run
against the gateway test/e2e/client-python.test.ts starts (real pi, the demo model).
"""

import http.server
import os
import threading
import unittest
from typing import Any, List

from pi_gateway import GatewayError, PiGateway, StreamInterrupted
from pi_gateway.events import AgentSettled, ApprovalRequested, MessageUpdate, StreamOpen, ToolExecutionStart

URL = os.environ["PI_GATEWAY_URL"]
TOKEN = os.environ.get("PI_GATEWAY_TOKEN")
WORKSPACE = os.environ.get("PI_GATEWAY_WORKSPACE")

# A run's stream that ends (cleanly, at a frame boundary) before the run's agent_settled.
CUT_SHORT = (
    'event: stream_open\ndata: {"type":"stream_open","runId":"gw_1","after":0}\n\n'
    'id: 1\ndata: {"id":"gw_1","type":"response","command":"prompt","success":true,"data":{"disposition":"started"}}\n\n'
    'id: 2\ndata: {"type":"agent_start"}\n\n'
)


def scripted(body: str, heads: List[Any]) -> http.server.ThreadingHTTPServer:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def do_POST(self) -> None:
            heads.append(self.headers.get("Last-Event-ID"))
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Interrupted(unittest.TestCase):
    def test_a_run_stream_that_ends_early_raises(self) -> None:
        heads: List[Any] = []
        server = scripted(CUT_SHORT, heads)
        try:
            gw = PiGateway(f"http://127.0.0.1:{server.server_address[1]}", retry_delay=0.01)
            stream = gw.prompt_stream("ses_x", "hi")
            seen: List[str] = []
            with self.assertRaises(StreamInterrupted) as raised:
                for event in stream:
                    seen.append(event.type)
            self.assertEqual(seen, ["stream_open", "response", "agent_start"])
            self.assertEqual(raised.exception.last_event_id, "2")
        finally:
            server.shutdown()
            server.server_close()


class TypedLive(unittest.TestCase):
    def setUp(self) -> None:
        self.gw = PiGateway(URL, TOKEN, retry_delay=0.05)
        self.created: List[str] = []

    def tearDown(self) -> None:
        for sid in self.created:
            try:
                self.gw.delete_session(sid)
            except GatewayError:
                pass

    def session(self, **body: Any) -> str:
        sid = self.gw.create_session(body)["id"]
        self.created.append(sid)
        return sid

    def test_snake_case_fields_and_structured_output(self) -> None:
        sid = self.session()
        schema = {"type": "object", "properties": {"answer": {"type": "number"}}, "required": ["answer"]}
        stream = self.gw.prompt_stream(sid, 'echo: {"answer": 42}', output_schema=schema)
        outputs = [e for e in stream.until_done().events_seen if e.type == "run_output"]
        self.assertEqual([e.output for e in outputs], [{"answer": 42}])

    def test_text_stream_and_final_text(self) -> None:
        sid = self.session()
        stream = self.gw.prompt_stream(sid, "count: 6")
        self.assertEqual("".join(stream.text_stream), "1 2 3 4 5 6")
        self.assertEqual(stream.final_text(), "1 2 3 4 5 6")
        self.assertEqual(stream.final_message()["role"], "assistant")
        seen = stream.events_seen
        self.assertIsInstance(seen[0], StreamOpen)
        self.assertIsInstance(seen[-1], AgentSettled)
        self.assertFalse(seen[-1].aborted)
        self.assertTrue(any(isinstance(e, MessageUpdate) and e.text_delta == "1" for e in seen))
        # The events still read like the dicts they came from.
        self.assertEqual(seen[-1]["type"], "agent_settled")

    def test_tool_calls_and_approvals(self) -> None:
        sid = self.session(extensions=["permission-gate"])
        if WORKSPACE:
            os.makedirs(os.path.join(WORKSPACE, sid, "scratch"), exist_ok=True)
        helper = threading.Thread(target=lambda: self.gw.approvals.answer_next(
            lambda a: {"value": "Allow"}, session_id=sid, poll_seconds=5, timeout=30))
        helper.start()
        stream = self.gw.prompt_stream(sid, "bash: rm -rf ./scratch && echo removed")
        self.assertEqual(stream.final_text(), "The command finished. Output:\nremoved")
        helper.join(30)
        calls = stream.tool_calls()
        self.assertEqual([(c.tool_name, c.args.get("command")) for c in calls],
                         [("bash", "rm -rf ./scratch && echo removed")])
        self.assertIsInstance(next(e for e in stream.events_seen if e.type == "approval_requested"), ApprovalRequested)
        self.assertEqual(stream.approvals_requested()[0]["title"].split("\n")[0], "Allow this bash command?")
        self.assertIsInstance(calls[0], ToolExecutionStart)


if __name__ == "__main__":
    unittest.main()
