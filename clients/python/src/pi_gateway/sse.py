"""A Server-Sent Events parser that follows the HTML spec's event-stream rules.

Lines end in LF, CR or CRLF (a CR ending one chunk and an LF starting the next are one line end),
a leading BOM is dropped, ``:`` lines are comments, ``data:`` lines join with LF, ``retry:`` takes
digits only, an ``id:`` holding NUL is ignored, and a block without data dispatches nothing.
Each frame says whether it carried its own ``id:`` line: the gateway leaves ids off frames that
are not events of the log (``stream_open``, ``dropped``, ``error``).
"""

import codecs
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, List, Optional


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
        text = self._buffer + text
        self._buffer = ""
        start = 0
        i = 0
        n = len(text)
        while i < n:
            ch = text[i]
            if ch == "\n" and self._skip_lf and i == start:
                self._skip_lf = False
                start = i + 1
                i += 1
                continue
            self._skip_lf = False
            if ch not in "\r\n":
                i += 1
                continue
            frame = self._line(text[start:i])
            if frame is not None:
                frames.append(frame)
            if ch == "\r":
                if i + 1 < n and text[i + 1] == "\n":
                    i += 1
                elif i + 1 == n:
                    self._skip_lf = True
            i += 1
            start = i
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


def parse_chunks(chunks: Iterable[bytes], on_retry: Optional[Callable[[int], None]] = None) -> Iterator[Frame]:
    """Frames of a byte stream, decoded as UTF-8 across chunk boundaries (a BOM at the start dropped)."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")("replace")
    parser = LineParser(on_retry)
    for chunk in chunks:
        yield from parser.feed(decoder.decode(chunk))
    yield from parser.feed(decoder.decode(b"", final=True))
