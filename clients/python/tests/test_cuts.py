"""A stream cut at any byte is resumed, every event yielded once and in order (sync and asyncio).

A loopback server stands in for the gateway, answering from a stream recorded from it
(``fixtures/prompt-stream.sse``: ``POST …/prompt/stream`` with the demo model, ``count: 2``) by the
gateway's resume rules, and cuts its first answer after k bytes, for every k from the status line
to the last byte. ``events()`` must come out whole at every k, before any position too (it opens
again from the ``after`` it was asked for, or live); ``prompt_stream()`` at every k once its
``stream_open`` frame is whole (before that nothing says where the run is, and the POST is never
sent twice: it raises). No gateway needed.
"""

import asyncio
import http.client
import json
import os
import socket
import threading
import unittest
from typing import Any, Dict, List, Optional, Tuple

from pi_gateway import AsyncPiGateway, PiGateway, StreamInterrupted

RECORDED = open(os.path.join(os.path.dirname(__file__), "fixtures", "prompt-stream.sse"), "rb").read()
BLOCKS = [block + b"\n\n" for block in RECORDED.split(b"\n\n") if block.strip()]
OPEN = json.loads(BLOCKS[0].split(b"data: ", 1)[1])
SID, AFTER, RUN = OPEN["sessionId"], OPEN["after"], OPEN["runId"]


def _id(block: bytes) -> int:
    return int(block.split(b"id: ", 1)[1].split(b"\n", 1)[0])


#: The session's log as the gateway holds it: the run's events, then (for GET …/events, which ends
#: only at session_exit) the session's deletion.
RUN_LOG: List[Tuple[int, bytes]] = [(_id(b), b) for b in BLOCKS[1:]]
LAST = RUN_LOG[-1][0]
EXIT = {"type": "session_exit", "sessionId": SID, "code": 0, "signal": None, "reason": "deleted", "stderrTail": ""}
SESSION_LOG = RUN_LOG + [(LAST + 1, f"id: {LAST + 1}\nevent: session_exit\ndata: {json.dumps(EXIT)}\n\n".encode())]
HEAD = (b"HTTP/1.1 200 OK\r\ncache-control: no-cache, no-transform\r\ncontent-type: text/event-stream\r\n"
        b"transfer-encoding: chunked\r\nx-accel-buffering: no\r\nconnection: close\r\n\r\n")


def frame(event: Dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event, separators=(',', ':'))}\n\n".encode()


def wire(blocks: List[bytes]) -> bytes:
    """An SSE answer as the gateway sends it: the first chunk holds stream_open and the first event."""
    chunks = [b"".join(blocks[:2])] + blocks[2:]
    return HEAD + b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"


def get_open(after: int) -> Dict[str, Any]:
    return {"type": "stream_open", "sessionId": SID, "after": after, "lastEventId": after, "firstAvailable": 1,
            "status": "idle"}


def expected(opened: Dict[str, Any], log: List[Tuple[int, bytes]]) -> List[Tuple[Optional[int], Dict[str, Any]]]:
    return [(None, opened)] + [(seq, json.loads(b.split(b"data: ", 1)[1])) for seq, b in log]


class Replay:
    """The gateway's answers from the recorded log, each connection answered in turn: GET …/events
    after ``?after=``, ``Last-Event-ID`` or (live) the recorded ``after``; POST …/prompt/stream a
    new command or, with ``Last-Event-ID``, the rest of its run (204 when nothing is left). The first
    answer is cut after ``cut`` bytes."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        self.cut: Optional[int] = None
        self.requests: List[Tuple[str, str, Optional[str]]] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def reset(self, cut: Optional[int]) -> None:
        self.cut, self.requests = cut, []

    def close(self) -> None:
        self.server.close()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                method, target, last = self._request(conn)
                answer = self.answer(method, target, last)
                if not self.requests[1:] and self.cut is not None:
                    answer = answer[:self.cut]
                try:
                    conn.sendall(answer)
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _request(self, conn: socket.socket) -> Tuple[str, str, Optional[str]]:
        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(65536)
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        while len(body) < int(headers.get("content-length") or 0):
            body += conn.recv(65536)
        method, target, _ = lines[0].split(" ")
        self.requests.append((method, target, headers.get("last-event-id")))
        return method, target, headers.get("last-event-id")

    @staticmethod
    def answer(method: str, target: str, last: Optional[str]) -> bytes:
        if method == "GET":
            after = int(last) if last is not None else int(target.split("after=")[1]) if "after=" in target else AFTER
            return wire([frame(get_open(after))] + [b for seq, b in SESSION_LOG if seq > after])
        if last is None:
            return wire([BLOCKS[0]] + [b for _, b in RUN_LOG])
        if int(last) >= LAST:
            return b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n"
        resumed = {"type": "stream_open", "sessionId": SID, "runId": RUN, "after": int(last), "resumed": True}
        return wire([frame(resumed)] + [b for seq, b in RUN_LOG if seq > int(last)])


#: Where the first answer of the prompt stream holds its whole stream_open frame.
OPEN_END = len(HEAD) + len(b"%x\r\n" % len(BLOCKS[0] + BLOCKS[1])) + len(BLOCKS[0])
FIRST_GET = len(Replay.answer("GET", "/?after=%d" % AFTER, None))
FIRST_POST = len(Replay.answer("POST", "/", None))
#: Past the live GET's head and stream_open frame: where the live and the positioned GET stop differing.
LIVE_SPAN = len(HEAD) + 8 + len(frame(get_open(AFTER))) + 50
UNRESUMABLE = (StreamInterrupted, OSError, http.client.HTTPException)


class Checks(unittest.TestCase):
    replay: Replay

    @classmethod
    def setUpClass(cls) -> None:
        cls.replay = Replay()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.replay.close()

    def seen(self, events: List[Any]) -> List[Tuple[Optional[int], Dict[str, Any]]]:
        return [(e.id, e.raw) for e in events]

    def check_events(self, k: int, events: List[Any], live: bool) -> None:
        self.assertEqual(self.seen(events), expected(get_open(AFTER), SESSION_LOG), f"cut at byte {k}")
        first = self.replay.requests[0]
        self.assertEqual(first, ("GET", f"/v1/sessions/{SID}/events" + ("" if live else f"?after={AFTER}"), None))
        for _, target, last in self.replay.requests[1:]:
            # A resume names the last event it yielded, or (none yet) opens as the first request did.
            self.assertTrue(last is not None or target == first[1], (k, self.replay.requests))

    def check_prompt(self, k: int, events: List[Any], error: Optional[BaseException]) -> None:
        posts = [r for r in self.replay.requests if r[0] == "POST"]
        self.assertEqual([r for r in posts if r[2] is None], posts[:1], f"cut at byte {k}: one new POST")
        if k < OPEN_END:
            self.assertIsInstance(error, UNRESUMABLE, f"cut at byte {k}")
            self.assertEqual(len(posts), 1)
            return
        self.assertIsNone(error, f"cut at byte {k}")
        self.assertEqual(self.seen(events), expected(OPEN, RUN_LOG), f"cut at byte {k}")


class EveryByteSync(Checks):
    def test_events_from_a_position(self) -> None:
        gw = PiGateway(self.replay.url, retry_delay=0)
        for k in range(FIRST_GET):
            self.replay.reset(k)
            self.check_events(k, list(gw.events(SID, after=AFTER)), live=False)

    def test_live_events_cut_before_their_first_frame(self) -> None:
        gw = PiGateway(self.replay.url, retry_delay=0)
        for k in range(LIVE_SPAN):
            self.replay.reset(k)
            self.check_events(k, list(gw.events(SID)), live=True)

    def test_prompt_stream(self) -> None:
        gw = PiGateway(self.replay.url, retry_delay=0)
        for k in range(FIRST_POST):
            self.replay.reset(k)
            events: List[Any] = []
            error: Optional[BaseException] = None
            try:
                for event in gw.prompt_stream(SID, "count: 2"):
                    events.append(event)
            except UNRESUMABLE as raised:
                error = raised
            self.check_prompt(k, events, error)


class EveryByteAsync(Checks):
    def test_events_and_prompt_stream(self) -> None:
        asyncio.run(self._run())

    async def _run(self) -> None:
        gw = AsyncPiGateway(self.replay.url, retry_delay=0)
        for k in range(FIRST_GET):
            self.replay.reset(k)
            self.check_events(k, [e async for e in gw.events(SID, after=AFTER)], live=False)
        for k in range(LIVE_SPAN):
            self.replay.reset(k)
            self.check_events(k, [e async for e in gw.events(SID)], live=True)
        for k in range(FIRST_POST):
            self.replay.reset(k)
            events: List[Any] = []
            error: Optional[BaseException] = None
            try:
                async for event in gw.prompt_stream(SID, "count: 2"):
                    events.append(event)
            except UNRESUMABLE as raised:
                error = raised
            self.check_prompt(k, events, error)


if __name__ == "__main__":
    unittest.main()
