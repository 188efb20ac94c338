"""pi_gateway against a live gateway with real pi and the demo model.

test/e2e/client-python.test.ts starts the gateway and runs this with PI_GATEWAY_URL and
PI_GATEWAY_TOKEN set:  python3 -m unittest discover -s clients/python/tests
"""

import http.server
import json
import os
import signal
import socket
import threading
import time
import unittest
from typing import Any, Dict, List

from pi_gateway import Aborted, AbortSignal, GatewayError, PiGateway, parse_chunks

URL = os.environ["PI_GATEWAY_URL"]
TOKEN = os.environ.get("PI_GATEWAY_TOKEN")
WORKSPACE = os.environ.get("PI_GATEWAY_WORKSPACE")


def deltas(events: List[Dict[str, Any]]) -> str:
    out = []
    for e in events:
        if e["type"] == "message_update" and e["assistantMessageEvent"]["type"] == "text_delta":
            out.append(e["assistantMessageEvent"]["delta"])
    return "".join(out)


class CuttableProxy:
    """A TCP proxy in front of the gateway whose open connections a test can cut (new ones pass)."""

    def __init__(self, target_port: int):
        self.target = target_port
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.requests: List[bytes] = []
        self.sockets: List[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            with self.lock:
                self.sockets += [client, upstream]
            threading.Thread(target=self._pipe, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, False), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, record: bool) -> None:
        first = True
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if record and first:
                    self.requests.append(data)
                    first = False
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> None:
        with self.lock:
            sockets, self.sockets = self.sockets, []
        for s in sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self) -> None:
        self.server.close()
        self.cut()


SCRIPT = [
    # retry: 30 overrides the client's 5 s delay: the test finishing fast shows it was honoured.
    'retry: 30\n\nevent: stream_open\ndata: {"type":"stream_open","after":0}\n\nid: 1\ndata: {"type":"agent_start"}\n\n'
    'id: 2\r\ndata: {"type":"turn_start"}\r\n\r\n'
    'event: dropped\ndata: {"type":"dropped","reason":"slow","detail":"behind","resumeFrom":2}\n\n',
    'data: {"type":"stream_open","after":2}\n\nid: 2\ndata: {"type":"turn_start"}\n\n'
    'id: 9\ndata: {"type":"gap","after":2,"firstAvailable":10,"lost":7}\n\nid: 10\ndata: {"type":"agent_end"}\n\n'
    'id: 11\ndata: {"type":"ag',
    'data: {"type":"stream_open","after":10}\n\nid: 11\ndata: {"type":"agent_settled"}\n\n'
    'id: 12\ndata: {"type":"session_exit","resumable":false}\n\n',
]


class ScriptedResume(unittest.TestCase):
    """The resume rules against a scripted server: dropped → resumeFrom, a doubled frame dropped,
    gap yielded, a cut in the middle of a frame resumed, retry: honoured."""

    def test_resume_rules(self) -> None:
        heads: List[Any] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_GET(self) -> None:
                heads.append(self.headers.get("Last-Event-ID"))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                self.wfile.write(SCRIPT[len(heads) - 1].encode())
                self.wfile.flush()
                if len(heads) == 2:
                    time.sleep(0.02)
                    self.connection.shutdown(socket.SHUT_RDWR)

            def log_message(self, *args: Any) -> None:
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            gw = PiGateway(f"http://127.0.0.1:{server.server_address[1]}", retry_delay=5)
            started = time.monotonic()
            stream = gw.events("ses_x")
            kinds = [e["type"] for e in stream]
            self.assertEqual(kinds, ["stream_open", "agent_start", "turn_start", "gap", "agent_end",
                                     "agent_settled", "session_exit"])
            self.assertEqual(heads, [None, "2", "10"])
            self.assertEqual((stream.reconnects, stream.last_event_id), (2, 12))
            self.assertLess(time.monotonic() - started, 3)
        finally:
            server.shutdown()
            server.server_close()


class LiveGateway(unittest.TestCase):
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

    def logged(self, sid: str, after: int) -> List[Dict[str, Any]]:
        """The session's log after `after` through the next agent_settled, as the gateway holds it."""
        res = self.gw.raw("GET", "/v1/sessions/{id}/events", path_params={"id": sid}, params={"after": after},
                          headers={"Accept": "text/event-stream"})
        out = []
        try:
            for frame in parse_chunks(res.chunks()):
                event = json.loads(frame.data)
                if event["type"] == "stream_open":
                    continue
                out.append(event)
                if event["type"] == "agent_settled":
                    return out
        finally:
            res.close()
        return out

    def test_gate_streamed_prompt_and_approvals_helper(self) -> None:
        sid = self.session(name="py-client", extensions=["permission-gate"])
        if WORKSPACE:
            os.makedirs(os.path.join(WORKSPACE, sid, "scratch"), exist_ok=True)
        answered: List[Any] = []
        helper = threading.Thread(target=lambda: answered.append(self.gw.approvals.answer_next(
            lambda a: {"value": "Allow", "by": "py-client-test"}, session_id=sid, poll_seconds=5, timeout=30)))
        helper.start()
        events = list(self.gw.prompt_stream(sid, "bash: rm -rf ./scratch && echo removed"))
        helper.join(30)
        self.assertEqual(answered[0]["status"], "answered")
        self.assertEqual(answered[0]["title"].split("\n")[0], "Allow this bash command?")
        kinds = [e["type"] for e in events]
        self.assertEqual((kinds[0], kinds[-1]), ("stream_open", "agent_settled"))
        self.assertIn("approval_requested", kinds)
        self.assertEqual(deltas(events), "The command finished. Output:\nremoved")
        self.assertEqual(self.gw.last_assistant_text(sid), {"text": "The command finished. Output:\nremoved"})

    def test_cut_stream_resumes_without_loss_or_doubles(self) -> None:
        proxy = CuttableProxy(int(URL.rsplit(":", 1)[1]))
        try:
            via = PiGateway(f"http://127.0.0.1:{proxy.port}", TOKEN, retry_delay=0.05)
            sid = self.session()
            stream = via.prompt_stream(sid, "slow: 12")
            events: List[Dict[str, Any]] = []
            cut = False
            for event in stream:
                events.append(event)
                if not cut and len(deltas(events).split(" ")) >= 3:
                    cut = True
                    proxy.cut()
            self.assertEqual(stream.reconnects, 1)
            # Resumed by the same POST with Last-Event-ID (issue 31 item 4): the rest of this run.
            self.assertTrue(any(r.startswith(b"POST /v1/sessions/") and b"last-event-id: " in r.lower()
                                for r in proxy.requests))
            self.assertEqual(deltas(events), "1 2 3 4 5 6 7 8 9 10 11 12")
            self.assertEqual([e.raw for e in events[1:]], self.logged(sid, events[0]["after"]))
            self.assertEqual(stream.final_text(), "1 2 3 4 5 6 7 8 9 10 11 12")
            # pi got the prompt once.
            messages = self.gw.request("GET", "/v1/sessions/{id}/messages", path_params={"id": sid})["messages"]
            self.assertEqual([m["role"] for m in messages if m["role"] != "system"], ["user", "assistant"])
        finally:
            proxy.close()

    def wait_idle(self, sid: str) -> None:
        deadline = time.monotonic() + 15
        while self.gw.get_session(sid)["currentRunId"] is not None:
            self.assertLess(time.monotonic(), deadline, "the run did not end")
            time.sleep(0.05)

    def last_stop_reason(self, sid: str) -> Any:
        messages = self.gw.request("GET", "/v1/sessions/{id}/messages", path_params={"id": sid})["messages"]
        return [m for m in messages if m["role"] == "assistant"][-1].get("stopReason")

    def test_a_keyboard_interrupt_in_a_wait_cancels_the_run(self) -> None:
        sid = self.session()
        main = threading.main_thread().ident
        assert main is not None and threading.current_thread().ident == main

        def interrupt() -> None:
            deadline = time.monotonic() + 15
            while self.gw.get_session(sid)["currentRunId"] is None and time.monotonic() < deadline:
                time.sleep(0.05)
            signal.pthread_kill(main, signal.SIGINT)

        helper = threading.Thread(target=interrupt)
        helper.start()
        with self.assertRaises(KeyboardInterrupt):
            self.gw.prompt_and_wait(sid, "slow: 600", timeout=120)
        helper.join()
        self.wait_idle(sid)
        self.assertEqual(self.last_stop_reason(sid), "aborted")

    def test_wait_mode_and_request(self) -> None:
        sid = self.session()
        result = self.gw.prompt_and_wait(sid, "echo: waited", timeout=30.0)
        self.assertEqual(result.get("text"), "waited")
        result = self.gw.prompt_and_wait(sid, "echo: waited", seconds=30)  # the older name
        self.assertEqual(result.get("text"), "waited")
        state = self.gw.request("GET", "/v1/sessions/{id}/state", path_params={"id": sid})
        self.assertFalse(state["isStreaming"])
        self.assertIsNone(self.gw.request("PUT", "/v1/sessions/{id}/name", path_params={"id": sid},
                                          body={"name": "x"}))
        # params is the query string, as in requests and httpx.
        page = self.gw.request("GET", "/v1/sessions", params={"limit": 1})
        self.assertEqual(len(page["sessions"]), 1)
        # The old spelling (params naming the path's {id}) still works, and says it is deprecated.
        with self.assertWarns(DeprecationWarning):
            old = self.gw.request("GET", "/v1/sessions/{id}/state", params={"id": sid})
        self.assertFalse(old["isStreaming"])

    def test_list_pages_and_all_sessions(self) -> None:
        mine = [self.session(), self.session(), self.session()]
        page = self.gw.list_sessions(limit=1)
        self.assertEqual(len(page["sessions"]), 1)
        self.assertTrue(page["hasMore"])
        self.assertIsNotNone(page["nextCursor"])
        listed = [x["id"] for x in self.gw.all_sessions(limit=2)]
        self.assertEqual(len(listed), len(set(listed)))
        self.assertEqual([sid for sid in listed if sid in mine], mine)
        self.assertEqual(self.gw.list_sessions(node="elsewhere")["sessions"], [])

    def test_bash_stream(self) -> None:
        sid = self.session()
        events = list(self.gw.bash_stream(sid, "echo one; echo two"))
        self.assertEqual(events[0]["type"], "stream_open")
        self.assertEqual(events[-1]["type"], "response")
        self.assertEqual(events[-1]["data"]["output"], "one\ntwo\n")
        self.assertTrue(all(e["type"] == "bash_execution_update" for e in events[1:-1]))

    def test_problem_json_is_a_gateway_error(self) -> None:
        with self.assertRaises(GatewayError) as missing:
            self.gw.get_session("ses_doesnotexist00")
        self.assertEqual((missing.exception.status, missing.exception.code), (404, "session_not_found"))
        with self.assertRaises(GatewayError) as denied:
            PiGateway(URL, "not-the-token-0123456789").list_sessions()
        self.assertEqual(str(denied.exception),
                         "HTTP 401 unauthorized: A valid bearer token is required (Authorization: Bearer …)")

    def test_abort_signal_cancels_a_stream(self) -> None:
        sid = self.session()
        signal = AbortSignal()
        seen: List[str] = []
        started = time.monotonic()
        with self.assertRaises(Aborted):
            for event in self.gw.events(sid, signal=signal):
                seen.append(event["type"])
                threading.Timer(0.2, signal.abort).start()
        self.assertEqual(seen, ["stream_open"])
        self.assertLess(time.monotonic() - started, 10)
        # A long-poll is cancelled the same way.
        waiting = AbortSignal()
        threading.Timer(0.2, waiting.abort).start()
        with self.assertRaises(Aborted):
            self.gw.approvals.next(session_id=sid, signal=waiting)

    def test_workspace_and_delete(self) -> None:
        sid = self.session()
        self.assertTrue(self.gw.workspace.write(sid, "notes/a.txt", "hello\n"))
        self.assertEqual([e["name"] for e in self.gw.workspace.list(sid, "notes")["entries"]], ["a.txt"])
        self.assertEqual(self.gw.workspace.read(sid, "notes/a.txt"), b"hello\n")
        self.gw.workspace.delete(sid, "notes/a.txt")
        self.gw.delete_session(sid)
        self.created.remove(sid)
        with self.assertRaises(GatewayError) as gone:
            self.gw.get_session(sid)
        self.assertIn(gone.exception.status, (404, 410))


if __name__ == "__main__":
    unittest.main()
