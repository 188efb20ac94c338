"""``GET /v1/events`` (every session's live events) as an iterator that survives cuts.

That stream is live only, so a reconnect alone would lose what happened meanwhile: each frame's
id is ``<sessionId>:<seq>`` and the new connection's ``stream_open`` lists every session's last
sequence number. For each session that moved on, the missing events are read from the session's
own stream (``?after=`` the last one yielded, up to the listed number), then the live stream goes
on, dropping what was already yielded. A session deleted during the cut is lost. Events are typed
(``events.parse_event``), dicts as well.
"""

import http.client
import json
import re
import time
from typing import Any, Dict, Iterator, Optional, Set, Tuple

from .errors import Aborted, GatewayError, StreamInterrupted
from .events import parse_event
from .sse import parse_chunks
from .transport import AbortSignal, Transport

HubEvent = Tuple[Optional[str], Optional[int], Dict[str, Any]]
_ALWAYS = {"stream_open", "gap", "dropped", "session_exit", "shutdown"}
_ID = re.compile(r"^(.*):(\d+)$")


def all_events(transport: Transport, types: Optional[str] = None, signal: Optional[AbortSignal] = None,
               retry_delay: float = 0.5, max_attempts: int = 10) -> Iterator[HubEvent]:
    """Yields ``(session_id, seq, event)``; session_id and seq are None for stream-level frames."""
    wanted: Optional[Set[str]] = set(types.split(",")) if types else None
    positions: Dict[str, int] = {}
    opened = closing = False
    failures = 0
    while True:
        res = None
        try:
            res = transport.send("GET", "/v1/events", query={"types": types},
                                 headers={"Accept": "text/event-stream"}, signal=signal,
                                 timeout=transport.stream_timeout)
            for frame in parse_chunks(res.chunks()):
                failures = 0
                event = json.loads(frame.data)
                kind = event.get("type")
                if kind == "stream_open":
                    if opened:
                        yield from _backfill(transport, event, positions, wanted, signal)
                    else:
                        for s in event.get("sessions") or []:
                            positions[s["id"]] = s["lastEventId"]
                        yield None, None, parse_event(event)
                    opened = True
                    continue
                if kind == "dropped":
                    break
                if kind == "shutdown":
                    closing = True
                at = _ID.match(frame.id or "")
                if at:
                    sid, seq = at.group(1), int(at.group(2))
                    if seq <= positions.get(sid, -1):
                        continue
                    positions[sid] = seq
                    yield sid, seq, parse_event(event, seq)
                else:
                    yield None, None, parse_event(event)
            if closing:
                return
        except GatewayError as error:
            if error.status < 500 and error.status != 429:
                raise
            failures += 1
        except (OSError, http.client.HTTPException, ValueError):
            if signal and signal.aborted:
                raise Aborted("aborted") from None
            failures += 1
            if closing:
                raise StreamInterrupted("The all-sessions stream ended with the gateway") from None
        finally:
            if res is not None:
                res.close()
        if failures > max_attempts:
            raise StreamInterrupted("The all-sessions stream broke and could not be reopened")
        if signal:
            signal.check()
        time.sleep(retry_delay)


def _backfill(transport: Transport, open_event: Dict[str, Any], positions: Dict[str, int],
              wanted: Optional[Set[str]], signal: Optional[AbortSignal]) -> Iterator[HubEvent]:
    for s in open_event.get("sessions") or []:
        sid, last = s["id"], s["lastEventId"]
        after = positions.get(sid, 0)
        if after >= last:
            continue
        # Unfiltered: the replay must reach `last` to know it is done, even if that event is filtered out.
        res = transport.send("GET", "/v1/sessions/{id}/events", params={"id": sid}, query={"after": after},
                             headers={"Accept": "text/event-stream"}, signal=signal,
                             timeout=transport.stream_timeout)
        try:
            for frame in parse_chunks(res.chunks()):
                if frame.id is None or not frame.id.isdigit():
                    continue
                seq = int(frame.id)
                event = json.loads(frame.data)
                if positions.get(sid, -1) < seq <= last:
                    positions[sid] = seq
                    if wanted is None or event.get("type") in wanted or event.get("type") in _ALWAYS:
                        yield sid, seq, parse_event(event, seq)
                if seq >= last:
                    break
        finally:
            res.close()
        positions[sid] = max(positions.get(sid, 0), last)
