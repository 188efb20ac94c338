"""A Server-Sent Events parser that follows the HTML spec's event-stream rules.

Lines end in LF, CR or CRLF (a CR ending one chunk and an LF starting the next are one line end),
a leading BOM is dropped, ``:`` lines are comments, ``data:`` lines join with LF, ``retry:`` takes
digits only, an ``id:`` holding NUL is ignored, and a block without data dispatches nothing.
Each frame says whether it carried its own ``id:`` line: the gateway leaves ids off frames that
are not events of the log (``stream_open``, ``dropped``, ``error``).

``SseDecoder`` takes bytes as they arrive, split anywhere (inside a line, a multi-byte character or
the BOM): a frame is dispatched only once its blank line has arrived, so a stream cut at any byte
yields every whole frame before the cut and nothing of the one it cut through.
"""

import codecs
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, List, Optional


_LINE_END = re.compile(r"\r\n?|\n")


@dataclass
class Frame:
    id: Optional[str]
    """The frame's own ``id:`` value, when it had one."""
    last_event_id: str
    """The spec's last-event-id buffer after this frame (it persists across frames)."""
    event: str
    data: str


class LineParser:
    """The line and field state machine, fed decoded text."""

    def __init__(self, on_retry: Optional[Callable[[int], None]] = None, last_event_id: str = ""):
        self._buffer = ""
        self._skip_lf = False
        self._data: List[str] = []
        self._event = ""
        self._id: Optional[str] = None
        self._last_event_id = last_event_id
        self._on_retry = on_retry

    def feed(self, text: str) -> List[Frame]:
        frames: List[Frame] = []
        if not text:
            return frames
        if self._skip_lf:
            # The last text ended in CR: an LF starting this one is the rest of that line end.
            self._skip_lf = False
            if text.startswith("\n"):
                text = text[1:]
        text = self._buffer + text
        start = 0
        for end in _LINE_END.finditer(text):
            frame = self._line(text[start:end.start()])
            if frame is not None:
                frames.append(frame)
            start = end.end()
            if end.group() == "\r" and start == len(text):
                self._skip_lf = True
        self._buffer = text[start:]
        return frames

    def _line(self, line: str) -> Optional[Frame]:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None
        field, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id":
            if "\0" not in value:
                self._id = value
                self._last_event_id = value
        elif field == "retry":
            if value.isdigit() and value.isascii() and self._on_retry:
                self._on_retry(int(value))
        return None

    def _dispatch(self) -> Optional[Frame]:
        frame_id, event, data = self._id, self._event or "message", self._data
        self._id, self._event, self._data = None, "", []
        if not data:
            return None
        return Frame(frame_id, self._last_event_id, event, "\n".join(data))


class SseDecoder:
    """Bytes in (any split), frames out: UTF-8 decoded incrementally, a BOM at the start dropped."""

    def __init__(self, on_retry: Optional[Callable[[int], None]] = None, last_event_id: str = ""):
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")("replace")
        self._lines = LineParser(on_retry, last_event_id)

    def feed(self, data: bytes) -> List[Frame]:
        """The frames ``data`` completed (often none: a frame waits for its blank line)."""
        return self._lines.feed(self._decoder.decode(data))

    def end(self) -> List[Frame]:
        """At the stream's end: what the last bytes complete (a frame without its blank line never is)."""
        return self._lines.feed(self._decoder.decode(b"", final=True))


def parse_chunks(chunks: Iterable[bytes], on_retry: Optional[Callable[[int], None]] = None) -> Iterator[Frame]:
    """Frames of a byte stream, as each one completes."""
    decoder = SseDecoder(on_retry)
    for chunk in chunks:
        yield from decoder.feed(chunk)
    yield from decoder.end()
