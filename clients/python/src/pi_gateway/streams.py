"""One session's events as an iterator that survives broken connections.

Every frame of a session's log carries its sequence number as ``id:``. After a cut the iterator
reconnects to ``GET /v1/sessions/{id}/events`` with ``Last-Event-ID`` set to the last one it
yielded, so the gateway replays exactly what came after: nothing lost, and a frame at or below
that number is dropped should one come twice. A ``dropped`` frame (this client fell too far
behind) is such a cut, resumed from its ``resumeFrom``; a ``gap`` frame (the log no longer
reaches back) is yielded so the caller knows what was lost. The ``stream_open`` of a reconnect is
not yielded. Commands that stream (prompt, bash) are POSTs and are never sent twice: their
stream is resumed by sending the same POST with ``Last-Event-ID``, which the gateway answers with
the rest of that run and never sends to pi twice (an older gateway: the session's event stream,
ending where the command's would have). A run that died with its gateway (an unclean stop) cannot
end there: its resumed stream gets a ``gap``, then ``run_lost``, and the iteration raises
``RunLost``. A run stream that ends before its run did raises ``StreamInterrupted``: never a
silent end. Events are typed (``events.py``) and still read like the dicts they came from.

Frames are parsed as bytes arrive (``sse.SseDecoder``), so a cut at any byte loses only the frame it
went through, which the resume sends again. Before the first position (a cut inside the first
frame), ``events()`` opens again as it first did: from the ``after`` it was asked for, or live. A
command's stream (a POST) cannot: only its ``stream_open`` says where the command's events are, and
sending it again would run it twice, so that cut raises ``StreamInterrupted``.
"""

import http.client
import time
from typing import Any, Callable, Dict, Iterator, List, Optional

from .errors import Aborted, GatewayError, RunLost, StreamInterrupted
from .events import Event as TypedEvent
from .events import RunHelpers, parse_event, text_deltas
from .position import Position
from .sse import parse_chunks
from .transport import AbortSignal, Response, Transport

Event = Dict[str, Any]


class StreamPlan:
    """What differs between streams: how the first connection opens, which events count, where it ends."""

    def __init__(self, session_id: str, open: Callable[[], Response], ends: Callable[[Event], bool],
                 clean_end_is_final: bool, accept: Optional[Callable[[Event], bool]] = None,
                 types: Optional[str] = None, fails: Optional[Callable[[Event], Optional[Exception]]] = None,
                 resume: Optional[Callable[[int], Response]] = None):
        self.session_id = session_id
        self.open = open
        self.ends = ends
        self.clean_end_is_final = clean_end_is_final
        self.accept = accept
        self.types = types
        # An event that ends the iteration with an error instead of being yielded (a run's run_lost).
        self.fails = fails
        # How a cut is resumed when not by GET …/events: the same POST with Last-Event-ID (a 204: nothing left).
        # Such a stream (a POST) is never opened twice: without a position it cannot be resumed.
        self.resume = resume


class EventStream:
    """Iterate it once (``for event in stream``); ``close()`` or ``with`` ends it early."""

    def __init__(self, transport: Transport, plan: StreamPlan, signal: Optional[AbortSignal] = None,
                 retry_delay: float = 0.5, max_attempts: int = 10):
        self.reconnects = 0
        self._transport = transport
        self._plan = plan
        self._signal = signal
        self._retry = retry_delay
        self._max_attempts = max_attempts
        self._position = Position(plan.accept)
        self._res: Optional[Response] = None
        self._iter: Optional[Iterator[Event]] = None

    @property
    def last_event_id(self) -> Optional[int]:
        """The sequence number of the last event yielded (or where the stream joined); None before."""
        return self._position.last_event_id

    def __iter__(self) -> Iterator[TypedEvent]:
        if self._iter is None:
            self._iter = self._run()
        return self._iter

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()

    def close(self) -> None:
        if self._iter is not None:
            self._iter.close()  # type: ignore[attr-defined]
        if self._res is not None:
            self._res.close()

    def _set_retry(self, ms: int) -> None:
        self._retry = ms / 1000

    def _keep(self, event: TypedEvent) -> None:
        """Called with each event before it is yielded (a run stream keeps them for its helpers)."""

    def _run(self) -> Iterator[TypedEvent]:
        plan = self._plan
        position = self._position
        try:
            self._res = self._first()
            while True:
                clean_end = False
                try:
                    for frame in parse_chunks(self._res.chunks(), self._set_retry):
                        taken = position.take(frame)
                        if position.resume_from is not None:
                            break
                        if taken is None:
                            continue
                        event, seq = taken
                        failure = plan.fails(event) if plan.fails else None
                        if failure is not None:
                            raise failure
                        typed = parse_event(event, seq)
                        self._keep(typed)
                        yield typed
                        if plan.ends(event):
                            return
                    clean_end = position.resume_from is None
                except (OSError, http.client.HTTPException, ValueError):
                    if self._signal and self._signal.aborted:
                        raise Aborted("aborted") from None
                if self._signal and self._signal.aborted:
                    raise Aborted("aborted")
                self._res.close()
                if clean_end and plan.clean_end_is_final:
                    # The server closed the stream before the event that ends it (a revoked share, a
                    # gateway going down): the caller must not mistake that for the end of the run.
                    raise StreamInterrupted("The stream ended before the run did", self._last())
                position.resumed()
                res = self._reconnect()
                if res is None:
                    return
                self._res = res
        finally:
            if self._res is not None:
                self._res.close()

    def _last(self) -> Optional[str]:
        return None if self.last_event_id is None else str(self.last_event_id)

    def _first(self) -> Response:
        """The first connection. A GET whose answer broke before its head was whole is opened again
        (nothing was read from it); a POST is sent once, whatever happens."""
        try:
            return self._plan.open()
        except (http.client.HTTPException, ConnectionResetError):
            if self._plan.resume is not None or (self._signal and self._signal.aborted):
                raise
        res = self._reconnect()
        if res is None:
            raise StreamInterrupted("The gateway had nothing to stream")
        return res

    def _reconnect(self) -> Optional[Response]:
        """The stream again after the last event seen; None when the gateway says nothing is left (204).
        Before any position (the cut came inside the first frame), a GET stream opens as it first did
        (from the ``after`` asked for, or live); a POST stream cannot: sending it again would run the
        command twice, and nothing yet says where its events are in the log."""
        after = self.last_event_id
        if after is None and self._plan.resume is not None:
            raise StreamInterrupted(
                "The stream broke before its stream_open frame said where the command's events are in the "
                "session's log, so it cannot be resumed without sending the command again (pi may be running "
                "it: follow the session's events())")
        last_error: Optional[BaseException] = None
        delay = self._retry
        for _ in range(self._max_attempts):
            if self._signal:
                self._signal.check()
            time.sleep(delay)
            try:
                if after is None:
                    res = self._plan.open()
                elif self._plan.resume is not None:
                    res = self._plan.resume(after)
                else:
                    res = self._transport.send(
                        "GET", "/v1/sessions/{id}/events", params={"id": self._plan.session_id},
                        query={"types": self._plan.types},
                        headers={"Accept": "text/event-stream", "Last-Event-ID": str(after)},
                        signal=self._signal, timeout=self._transport.stream_timeout,
                    )
                self.reconnects += 1
                if res.status == 204:
                    res.close()
                    return None
                return res
            except GatewayError as error:
                # A 4xx other than 429 will not change by retrying (the session is gone, the token revoked).
                if error.status < 500 and error.status != 429:
                    raise
                delay = error.retry_after or delay
                last_error = error
            except (OSError, http.client.HTTPException) as error:
                if self._signal and self._signal.aborted:
                    raise Aborted("aborted") from None
                last_error = error
        where = "the start" if after is None else f"event {after}"
        raise StreamInterrupted(f"Could not reconnect after {where}: {last_error}", self._last())


def run_end() -> Callable[[Event], bool]:
    """Where a prompt/steer/follow-up stream ends: pi refused or handled it, else the run's agent_settled."""
    state: Dict[str, Any] = {"run": None, "responded": False}

    def ends(event: Event) -> bool:
        kind = event["type"]
        if kind == "stream_open" and state["run"] is None:
            state["run"] = event.get("runId")
        if kind in ("session_exit", "error"):
            return True
        if not state["responded"]:
            if kind != "response" or event.get("id") != state["run"]:
                return False
            state["responded"] = True
            data = event.get("data") or {}
            return event.get("success") is not True or data.get("disposition") == "handled"
        return kind == "agent_settled"

    return ends


def run_lost(event: Event) -> Optional[Exception]:
    """A run stream's ``run_lost``: the run died with its gateway or node and will never settle."""
    if event["type"] != "run_lost":
        return None
    return RunLost(str(event.get("sessionId")), str(event.get("runId")), str(event.get("reason") or "the run was lost"))


def command_events() -> Dict[str, Any]:
    """The events of one streamed bash command: its output updates and pi's response to it."""
    state: Dict[str, Optional[str]] = {"id": None}

    def ours(event: Event) -> bool:
        kind = event["type"]
        if kind in ("session_exit", "error"):
            return True
        return kind in ("bash_execution_update", "response") and event.get("id") == state["id"]

    def ends(event: Event) -> bool:
        if event["type"] == "stream_open" and state["id"] is None:
            state["id"] = event.get("commandId")
        return ours(event) and event["type"] != "bash_execution_update"

    return {"types": "bash_execution_update,response", "accept": ours, "ends": ends}


class RunStream(EventStream, RunHelpers):
    """A prompt's (steer's, follow-up's) stream with the helpers of the OpenAI and Anthropic SDKs:
    ``text_stream`` (the text deltas as they arrive), ``until_done()``, ``final_message()``,
    ``final_text()``, ``tool_calls()``, ``approvals_requested()``."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._seen: List[TypedEvent] = []

    def _keep(self, event: TypedEvent) -> None:
        self._record(event)

    @property
    def text_stream(self) -> Iterator[str]:
        """The run's text deltas, consuming the stream as they arrive."""
        return text_deltas(self)

    def until_done(self) -> "RunStream":
        """Reads the rest of the run (raises as iteration does); returns the stream."""
        for _ in self:
            pass
        return self

    def final_message(self) -> Optional[Dict[str, Any]]:
        """The run's last assistant message, once the run is over (reads the rest first)."""
        return RunHelpers.final_message(self.until_done())

    def final_text(self) -> str:
        """The text of the run's last assistant message that had text (reads the rest first)."""
        return RunHelpers.final_text(self.until_done())
