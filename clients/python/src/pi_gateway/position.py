"""What each frame of a session's stream means for where the stream is, shared by the sync and the
asyncio streams (``streams.py``, ``aio.py``), so both resume by the same rules.

The position is the last event's sequence number (its ``id:``), or before any event the ``after``
of the ``stream_open`` frame. A frame at or below the position came twice and is dropped; the
``stream_open`` of a reconnect is not yielded (to the caller it is one stream); a ``dropped`` frame
ends the connection, to be resumed from its ``resumeFrom``.
"""

import json
from typing import Any, Callable, Dict, Optional, Tuple

from .sse import Frame

Event = Dict[str, Any]


class Position:
    def __init__(self, accept: Optional[Callable[[Event], bool]] = None):
        #: The sequence number of the last event yielded, or where the stream joined; None before either.
        self.last_event_id: Optional[int] = None
        #: Set by a ``dropped`` frame: stop reading and resume after this position.
        self.resume_from: Optional[int] = None
        self._accept = accept
        self._opened = False

    def take(self, frame: Frame) -> Optional[Tuple[Event, Optional[int]]]:
        """The event a frame carries and its sequence number, or None when it is not to be yielded."""
        try:
            event = json.loads(frame.data)
        except ValueError:
            return None
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            return None
        seq: Optional[int] = None
        if frame.id is not None and frame.id.isdigit():
            seq = int(frame.id)
            if self.last_event_id is not None and seq <= self.last_event_id:
                return None
            self.last_event_id = seq
        kind = event["type"]
        if kind == "stream_open":
            if self.last_event_id is None and _whole(event.get("after")) is not None:
                self.last_event_id = _whole(event.get("after"))
            if self._opened:
                return None
            self._opened = True
        elif kind == "dropped":
            at = _whole(event.get("resumeFrom"))
            self.resume_from = at if at is not None else self.last_event_id
            return None
        if self._accept and kind not in ("stream_open", "gap") and not self._accept(event):
            return None
        return event, seq

    def resumed(self) -> None:
        """Called before reconnecting: a ``dropped`` frame's position becomes the stream's."""
        if self.resume_from is not None:
            self.last_event_id = self.resume_from
            self.resume_from = None


def _whole(value: Any) -> Optional[int]:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None
