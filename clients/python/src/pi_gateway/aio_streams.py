"""The asyncio client's streams: ``async for`` over a session's events, resumed after a cut by the
sync streams' rules (``streams.py``, ``position.py``): ``Last-Event-ID`` from the last event
yielded, the same POST for a command's stream, and before any position the GET as first opened."""

import asyncio
from typing import Any, AsyncIterator, Callable, Dict, List, Optional

from .aio_transport import AsyncResponse
from .errors import GatewayError, StreamInterrupted
from .events import Event, RunHelpers, parse_event
from .position import Position
from .sse import SseDecoder
from .streams import run_lost

#: Opens the stream: None for the first connection, else the position to resume after.
Opener = Callable[[Optional[int]], Any]


class AsyncEventStream:
    """Iterate it once (``async for event in stream``); ``aclose()`` or ``async with`` ends it early.
    ``replayable``: a GET, opened again as it first was when cut before any position (a POST is not)."""

    def __init__(self, open: Opener, ends: Callable[[Dict[str, Any]], bool], run: bool,
                 accept: Optional[Callable[[Dict[str, Any]], bool]] = None, retry_delay: float = 0.5,
                 max_attempts: int = 10, replayable: bool = False):
        self.reconnects = 0
        self._open = open
        self._ends = ends
        self._run_stream = run
        self._replayable = replayable
        self._position = Position(accept)
        self._retry = retry_delay
        self._max_attempts = max_attempts
        self._res: Optional[AsyncResponse] = None
        self._iter: Optional[AsyncIterator[Event]] = None

    @property
    def last_event_id(self) -> Optional[int]:
        """The sequence number of the last event yielded (or where the stream joined); None before."""
        return self._position.last_event_id

    def __aiter__(self) -> AsyncIterator[Event]:
        if self._iter is None:
            self._iter = self._events()
        return self._iter

    async def __aenter__(self) -> "AsyncEventStream":
        return self

    async def __aexit__(self, *_: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._iter is not None:
            await self._iter.aclose()  # type: ignore[attr-defined]
        if self._res is not None:
            self._res.close()

    def _keep(self, event: Event) -> None:
        """Called with each event before it is yielded."""

    def _set_retry(self, ms: int) -> None:
        self._retry = ms / 1000

    async def _events(self) -> AsyncIterator[Event]:
        position = self._position
        try:
            self._res = await self._first()
            while True:
                clean_end = False
                decoder = SseDecoder(self._set_retry)
                try:
                    async for chunk in self._res.chunks():
                        for frame in decoder.feed(chunk):
                            taken = position.take(frame)
                            if position.resume_from is not None:
                                break
                            if taken is None:
                                continue
                            event, seq = taken
                            failure = run_lost(event) if self._run_stream else None
                            if failure is not None:
                                raise failure
                            typed = parse_event(event, seq)
                            self._keep(typed)
                            yield typed
                            if self._ends(event):
                                return
                        if position.resume_from is not None:
                            break
                    clean_end = position.resume_from is None
                except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError, ValueError):
                    pass
                self._res.close()
                if clean_end and self._run_stream:
                    raise StreamInterrupted("The stream ended before the run did", _text(self.last_event_id))
                position.resumed()
                res = await self._reconnect()
                if res is None:
                    return
                self._res = res
        finally:
            if self._res is not None:
                self._res.close()

    async def _first(self) -> AsyncResponse:
        """The first connection; a GET whose answer broke before its head was whole is opened again."""
        try:
            return await self._open(None)
        except (ConnectionResetError, asyncio.IncompleteReadError):
            if not self._replayable:
                raise
        res = await self._reconnect()
        if res is None:
            raise StreamInterrupted("The gateway had nothing to stream")
        return res

    async def _reconnect(self) -> Optional[AsyncResponse]:
        after = self.last_event_id
        if after is None and not self._replayable:
            raise StreamInterrupted(
                "The stream broke before its stream_open frame said where the command's events are in the "
                "session's log, so it cannot be resumed without sending the command again (pi may be running "
                "it: follow the session's events())")
        last_error: Optional[BaseException] = None
        delay = self._retry
        for _ in range(self._max_attempts):
            await asyncio.sleep(delay)
            try:
                res = await self._open(after)
                self.reconnects += 1
                if res.status == 204:
                    res.close()
                    return None
                return res
            except GatewayError as error:
                if error.status < 500 and error.status != 429:
                    raise
                delay = error.retry_after or delay
                last_error = error
            except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError) as error:
                last_error = error
        where = "the start" if after is None else f"event {after}"
        raise StreamInterrupted(f"Could not reconnect after {where}: {last_error}", _text(after))


def _text(value: Optional[int]) -> Optional[str]:
    return None if value is None else str(value)


class AsyncRunStream(AsyncEventStream, RunHelpers):
    """A run's stream with the SDK helpers: ``text_stream``, ``until_done()``, ``final_message()``,
    ``final_text()`` (awaitables that read the rest first), ``tool_calls()``, ``approvals_requested()``."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._seen: List[Event] = []

    def _keep(self, event: Event) -> None:
        self._record(event)

    @property
    def text_stream(self) -> AsyncIterator[str]:
        """The run's text deltas, consuming the stream as they arrive (``async for``)."""
        return _text_stream(self)

    async def until_done(self) -> "AsyncRunStream":
        async for _ in self:
            pass
        return self

    async def final_message(self) -> Optional[Dict[str, Any]]:  # type: ignore[override]
        return RunHelpers.final_message(await self.until_done())

    async def final_text(self) -> str:  # type: ignore[override]
        return RunHelpers.final_text(await self.until_done())


async def _text_stream(stream: AsyncRunStream) -> AsyncIterator[str]:
    async for event in stream:
        delta = getattr(event, "text_delta", None)
        if delta:
            yield delta
