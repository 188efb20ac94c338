"""The SSE parser at the byte level: a stream fed in pieces split anywhere (inside a line, a CRLF, a
multi-byte character, the BOM) gives the frames it gives whole, and a frame is dispatched only once
its blank line has arrived. No gateway needed."""

import unittest
from typing import List, Tuple

from pi_gateway.sse import Frame, SseDecoder

STREAM = (
    "\ufeff: heartbeat\r\n"
    "retry: 1500\n\n"
    "event: stream_open\ndata: {\"type\":\"stream_open\",\"after\":4}\n\n"
    "id: 5\r\nevent: message_update\r\ndata: {\"delta\":\"h\u00e9 \u2028 \U0001f600\"}\r\n\r\n"
    "id: 6\rdata: line one\rdata:line two\r\r"
    "data: no id, kept buffer\n\n"
    "id: 7\ndata: {\"type\":\"agent_settled\"}\n\n"
    "id: 8\ndata: the frame a cut goes through"
).encode("utf-8")


def frames(pieces: List[bytes]) -> Tuple[List[Frame], List[int]]:
    retries: List[int] = []
    decoder = SseDecoder(retries.append)
    out: List[Frame] = []
    for piece in pieces:
        out += decoder.feed(piece)
    return out + decoder.end(), retries


WHOLE, RETRIES = frames([STREAM])


class Splits(unittest.TestCase):
    def test_the_whole_stream(self) -> None:
        self.assertEqual([(f.id, f.last_event_id, f.event, f.data) for f in WHOLE], [
            (None, "", "stream_open", '{"type":"stream_open","after":4}'),
            ("5", "5", "message_update", '{"delta":"h\u00e9 \u2028 \U0001f600"}'),
            ("6", "6", "message", "line one\nline two"),
            (None, "6", "message", "no id, kept buffer"),
            ("7", "7", "message", '{"type":"agent_settled"}'),
        ])
        self.assertEqual(RETRIES, [1500])

    def test_every_split_in_two_and_three(self) -> None:
        n = len(STREAM)
        for i in range(n + 1):
            self.assertEqual(frames([STREAM[:i], STREAM[i:]]), (WHOLE, RETRIES), f"split at {i}")
        for i in range(0, n + 1, 3):
            for j in range(i, n + 1, 2):
                self.assertEqual(frames([STREAM[:i], STREAM[i:j], STREAM[j:]])[0], WHOLE, f"split at {i}, {j}")

    def test_byte_by_byte(self) -> None:
        self.assertEqual(frames([STREAM[i:i + 1] for i in range(len(STREAM))]), (WHOLE, RETRIES))

    def test_a_cut_yields_the_whole_frames_before_it_and_nothing_of_the_one_it_cut(self) -> None:
        for i in range(len(STREAM) + 1):
            decoder = SseDecoder()
            # A cut connection is never ended: what the cut frame had is dropped with the decoder.
            got = decoder.feed(STREAM[:i])
            upto = len(STREAM[:i].decode("utf-8", "ignore"))
            whole = [f for f in WHOLE if _end_of(f) <= upto]
            self.assertEqual(got, whole, f"cut at {i}")


def _end_of(frame: Frame) -> int:
    """Where a frame of STREAM is whole (its blank line's end: the CR of a CRLF is enough), in characters."""
    text = STREAM.decode("utf-8")
    needle = frame.data.split("\n")[-1]
    at = text.index(needle) + len(needle)
    for blank in ("\r\n\r", "\n\n", "\r\r"):
        if text.startswith(blank, at):
            return at + len(blank)
    raise AssertionError(f"no blank line after {frame}")


if __name__ == "__main__":
    unittest.main()
