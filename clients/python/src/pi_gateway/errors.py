"""Errors: a problem+json answer (GatewayError) and a stream that could not be resumed."""

import json
from typing import Any, Dict, Optional


class GatewayError(Exception):
    """An answer outside 2xx, decoded from its RFC 9457 problem+json body.

    ``code`` is the stable machine-readable part (``session_not_found``, ``unauthorized`` …),
    ``detail`` says what happened, ``problem`` is the whole body.
    """

    def __init__(self, status: int, problem: Dict[str, Any], retry_after: Optional[float] = None):
        self.status = status
        self.code: str = str(problem.get("code", f"http_{status}"))
        self.detail: str = str(problem.get("detail", ""))
        self.problem = problem
        self.retry_after = retry_after
        super().__init__(f"HTTP {status} {self.code}: {self.detail}")

    @classmethod
    def from_body(cls, status: int, reason: str, body: bytes, retry_after: Optional[str]) -> "GatewayError":
        text = body.decode("utf-8", "replace")
        problem: Optional[Dict[str, Any]] = None
        try:
            parsed = json.loads(text)
            if isinstance(parsed, dict) and isinstance(parsed.get("code"), str):
                problem = parsed
        except ValueError:
            pass
        if problem is None:
            # Not problem+json (a proxy's page): still one error type for the caller.
            problem = {"type": "about:blank", "title": reason, "status": status,
                       "code": f"http_{status}", "detail": text[:500] or reason}
        seconds: Optional[float] = None
        if retry_after is not None:
            try:
                seconds = float(retry_after)
            except ValueError:
                seconds = None
        return cls(status, problem, seconds)


class StreamInterrupted(Exception):
    """A stream broke and could not be resumed (no position yet, or reconnects kept failing)."""

    def __init__(self, message: str, last_event_id: Optional[str] = None):
        super().__init__(message)
        self.last_event_id = last_event_id


class RunLost(Exception):
    """The run a stream followed no longer exists: the gateway (or cluster node) running it stopped
    uncleanly (SIGKILL, a crash) and its end was never recorded. The session is ``stopped`` and can
    be resumed, but the run's outcome is unknown."""

    def __init__(self, session_id: str, run_id: str, reason: str):
        super().__init__(f"Run {run_id} of session {session_id} was lost: {reason}. "
                         "The session is stopped; resume it to run again")
        self.session_id = session_id
        self.run_id = run_id
        self.reason = reason


class Aborted(Exception):
    """The call's AbortSignal fired."""
