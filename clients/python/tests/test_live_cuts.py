"""Against a live gateway (real pi, the demo model): streams cut at chosen bytes of their first answer
(inside the head, inside stream_open, right after it, inside the first chunk, mid-run) come out
whole, each event once and in order, and pi gets the prompt once."""

import asyncio
import json
import os
import socket
import threading
import unittest
from typing import Any, Dict, List, Optional, Tuple

from test_live import deltas

from pi_gateway import AsyncPiGateway, GatewayError, PiGateway, parse_chunks

URL = os.environ["PI_GATEWAY_URL"]
TOKEN = os.environ.get("PI_GATEWAY_TOKEN")


class CutOnce:
    """A TCP proxy to the gateway that cuts its first answer where ``marker`` (bytes of the answer)
    ends plus ``shift``; later connections pass whole."""

    def __init__(self, marker: bytes, shift: int):
        self.marker, self.shift = marker, shift
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        self.requests: List[bytes] = []
        self.cut_at: Optional[int] = None
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self.server.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", int(URL.rsplit(":", 1)[1])))
            first = not self.requests
            threading.Thread(target=self._up, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._down, args=(upstream, client, first), daemon=True).start()

    def _up(self, src: socket.socket, dst: socket.socket) -> None:
        head = True
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if head:
                    self.requests.append(data)
                    head = False
                dst.sendall(data)
        except OSError:
            pass

    def _down(self, src: socket.socket, dst: socket.socket, cut: bool) -> None:
        sent = b""
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if cut:
                    seen = sent + data
                    at = seen.find(self.marker)
                    if at != -1:
                        self.cut_at = at + len(self.marker) + self.shift
                        dst.sendall(seen[len(sent):self.cut_at])
                        break
                    sent = seen
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


#: Cut points in a stream's first answer: (marker, bytes after its end).
HEAD = (b"\r\n\r\n", -6)
IN_OPEN = (b'"type":"stream_open"', 0)
AFTER_OPEN = (b'}\n\n', 0)
IN_RESPONSE = (b'"type":"response"', 3)
MID_RUN = (b'"text_delta"', 5)


class LiveCuts(unittest.TestCase):
    def setUp(self) -> None:
        self.gw = PiGateway(URL, TOKEN, retry_delay=0.05)
        self.sid = self.gw.create_session({})["id"]

    def tearDown(self) -> None:
        try:
            self.gw.delete_session(self.sid)
        except GatewayError:
            pass

    def logged(self, after: int, until: str = "agent_settled") -> List[Tuple[Optional[int], Dict[str, Any]]]:
        """The session's log after ``after`` through the next ``until``, as the gateway holds it."""
        res = self.gw.raw("GET", "/v1/sessions/{id}/events", path_params={"id": self.sid}, params={"after": after},
                          headers={"Accept": "text/event-stream"})
        out = []
        try:
            for frame in parse_chunks(res.chunks()):
                event = json.loads(frame.data)
                if event["type"] != "stream_open":
                    out.append((int(frame.id), event))
                if event["type"] == until:
                    return out
        finally:
            res.close()
        return out

    def prompts(self) -> List[str]:
        messages = self.gw.request("GET", "/v1/sessions/{id}/messages", path_params={"id": self.sid})["messages"]
        return [m["role"] for m in messages if m["role"] in ("user", "assistant")]

    def test_prompt_stream_cut_after_its_stream_open(self) -> None:
        for n, (marker, shift) in enumerate([AFTER_OPEN, IN_RESPONSE, MID_RUN]):
            proxy = CutOnce(marker, shift)
            try:
                stream = PiGateway(proxy.url, TOKEN, retry_delay=0.05).prompt_stream(self.sid, "count: 4")
                events = list(stream)
                self.assertIsNotNone(proxy.cut_at, marker)
                self.assertEqual(stream.reconnects, 1)
                self.assertEqual([(e.id, e.raw) for e in events[1:]], self.logged(events[0]["after"]), marker)
                self.assertEqual(deltas(events), "1 2 3 4")
                self.assertEqual(self.prompts(), ["user", "assistant"] * (n + 1), marker)
            finally:
                proxy.close()

    def test_events_cut_in_the_head_and_inside_stream_open(self) -> None:
        first = self.gw.prompt_and_wait(self.sid, "count: 3", timeout=30)["firstEventId"]
        for marker, shift in [HEAD, IN_OPEN, AFTER_OPEN, IN_RESPONSE]:
            proxy = CutOnce(marker, shift)
            try:
                stream = PiGateway(proxy.url, TOKEN, retry_delay=0.05).events(self.sid, after=first - 1)
                events = []
                for event in stream:
                    events.append(event)
                    if event.type == "agent_settled":
                        break
                stream.close()
                self.assertIsNotNone(proxy.cut_at, marker)
                self.assertEqual(events[0].type, "stream_open")
                self.assertEqual([(e.id, e.raw) for e in events[1:]], self.logged(first - 1), marker)
            finally:
                proxy.close()

    def test_async_prompt_stream_cut_inside_its_first_chunk(self) -> None:
        proxy = CutOnce(*IN_RESPONSE)

        async def run() -> List[Any]:
            return [e async for e in AsyncPiGateway(proxy.url, TOKEN, retry_delay=0.05).prompt_stream(self.sid, "count: 4")]

        try:
            events = asyncio.run(run())
            self.assertIsNotNone(proxy.cut_at)
            self.assertEqual([(e.id, e.raw) for e in events[1:]], self.logged(events[0]["after"]))
            self.assertEqual(self.prompts(), ["user", "assistant"])
        finally:
            proxy.close()


if __name__ == "__main__":
    unittest.main()
