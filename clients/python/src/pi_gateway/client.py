"""PiGateway: every operation through ``request()``, named methods for the common flow, streams."""

import math
import warnings
from typing import Any, Dict, Iterator, List, Mapping, Optional, Union, cast

from . import schema as s
from .approvals import Approvals
from .fields import run_body
from .hub import HubEvent, all_events
from .streams import EventStream, RunStream, StreamPlan, command_events, run_end, run_lost
from .tool_calls import ToolCalls
from .transport import AbortSignal, Response, Transport
from .workspace import Workspace


class PiGateway:
    """pi-gateway over HTTP (standard library only).

    ``request(method, path, ...)`` reaches any operation as the spec writes it
    (``request("POST", "/v1/sessions/{id}/steer", path_params={"id": sid}, body={"message": "…"})``);
    a problem+json answer is raised as ``GatewayError``. Streams are iterators that reconnect with
    ``Last-Event-ID`` on their own. Every call takes ``signal`` (an ``AbortSignal``).
    """

    def __init__(self, base_url: str, token: Optional[str] = None, headers: Optional[Mapping[str, str]] = None,
                 timeout: float = 300.0, stream_timeout: float = 90.0, retry_delay: float = 0.5,
                 max_reconnects: int = 10):
        self._http = Transport(base_url, token, headers, timeout, stream_timeout)
        self._retry_delay = retry_delay
        self._max_reconnects = max_reconnects
        self.approvals = Approvals(self._http)
        #: Client tools: ``tool_calls.run(sid, "…", {"lookup_price": fn})`` answers the calls of a run.
        self.tool_calls = ToolCalls(self._http)
        self.workspace = Workspace(self._http)

    # Any operation

    def request(self, method: str, path: str, *, path_params: Optional[Mapping[str, Any]] = None,
                params: Optional[Mapping[str, Any]] = None, body: Any = None,
                headers: Optional[Mapping[str, str]] = None, signal: Optional[AbortSignal] = None,
                query: Optional[Mapping[str, Any]] = None) -> Any:
        """The decoded JSON of the 2xx answer (None for 204). ``params`` is the query string, as in
        requests and httpx; ``path_params`` fill the ``{name}``s of ``path``. (``query=`` is the old
        name of ``params``; ``params`` naming only the path's ``{name}``s, as before, still works
        with a DeprecationWarning.)"""
        path_params, query = _split_params(path, path_params, params, query)
        return self._http.json(method, path, params=path_params, query=query, body=body, headers=headers,
                               signal=signal)

    def raw(self, method: str, path: str, *, path_params: Optional[Mapping[str, Any]] = None,
            params: Optional[Mapping[str, Any]] = None, query: Optional[Mapping[str, Any]] = None,
            **kwargs: Any) -> Response:
        """The same, answering the open response (read it, then close it); still raises GatewayError."""
        path_params, query = _split_params(path, path_params, params, query)
        return self._http.send(method, path, params=path_params, query=query, **kwargs)

    # Sessions

    def create_session(self, body: Optional[s.CreateSession] = None, signal: Optional[AbortSignal] = None) -> s.Session:
        return cast(s.Session, self._http.json("POST", "/v1/sessions", body=body or {}, signal=signal))

    def fork_session(self, session_id: str, entry_id: Optional[str] = None, name: Optional[str] = None,
                     idempotency_key: Optional[str] = None, signal: Optional[AbortSignal] = None) -> s.ForkedSession:
        """A new session of the caller's from this one: its conversation up to ``entry_id`` (inclusive;
        all of it when None) and a copy of its folder. The original is only read."""
        body = {k: v for k, v in {"entryId": entry_id, "name": name}.items() if v is not None}
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key is not None else None
        return cast(s.ForkedSession, self._http.json(
            "POST", "/v1/sessions/{id}/fork-session", params={"id": session_id}, body=body, headers=headers,
            signal=signal))

    def get_session(self, session_id: str, signal: Optional[AbortSignal] = None) -> s.Session:
        return cast(s.Session, self._http.json("GET", "/v1/sessions/{id}", params={"id": session_id}, signal=signal))

    def list_sessions(self, limit: Optional[int] = None, cursor: Optional[str] = None, status: Optional[str] = None,
                      node: Optional[str] = None, principal: Optional[str] = None,
                      signal: Optional[AbortSignal] = None) -> s.SessionList:
        """One page of sessions, oldest first (100 unless ``limit`` says otherwise); ``nextCursor`` goes on."""
        query = {"limit": limit, "cursor": cursor, "status": status, "node": node, "principal": principal}
        return cast(s.SessionList, self._http.json("GET", "/v1/sessions", query=query, signal=signal))

    def all_sessions(self, limit: Optional[int] = None, status: Optional[str] = None, node: Optional[str] = None,
                     principal: Optional[str] = None, signal: Optional[AbortSignal] = None) -> Iterator[s.Session]:
        """Every session that matches, page after page (``limit`` is the page size)."""
        cursor: Optional[str] = None
        while True:
            page = self.list_sessions(limit, cursor, status, node, principal, signal=signal)
            yield from page["sessions"]
            cursor = page["nextCursor"]
            if cursor is None:
                return

    def delete_session(self, session_id: str, signal: Optional[AbortSignal] = None) -> None:
        self._http.json("DELETE", "/v1/sessions/{id}", params={"id": session_id}, signal=signal)

    def budget(self, session_id: str, signal: Optional[AbortSignal] = None) -> Dict[str, Any]:
        """The session's budget and what its runs used (``usedTokens``, ``usedCostUsd``, ``exhausted``)."""
        return cast(Dict[str, Any], self._http.json(
            "GET", "/v1/sessions/{id}/budget", params={"id": session_id}, signal=signal))

    def set_budget(self, session_id: str, max_tokens: Optional[int] = None, max_cost_usd: Optional[float] = None,
                   signal: Optional[AbortSignal] = None) -> Dict[str, Any]:
        """Replaces the session's budget (a limit left as None is removed); past it, run commands raise
        ``GatewayError`` with ``code == "budget_exhausted"``."""
        body: Dict[str, Any] = {}
        if max_tokens is not None:
            body["maxTokens"] = max_tokens
        if max_cost_usd is not None:
            body["maxCostUsd"] = max_cost_usd
        return cast(Dict[str, Any], self._http.json(
            "PUT", "/v1/sessions/{id}/budget", params={"id": session_id}, body=body, signal=signal))

    # Runs

    def prompt(self, session_id: str, message: str, signal: Optional[AbortSignal] = None,
               **fields: Any) -> s.RunAccepted:
        """Sends a prompt; answers once pi accepted it (follow the run on ``events()``)."""
        return cast(s.RunAccepted, self._http.json(
            "POST", "/v1/sessions/{id}/prompt", params={"id": session_id}, body=run_body(message, fields),
            signal=signal))

    def prompt_and_wait(self, session_id: str, message: str, seconds: Optional[float] = None,
                        signal: Optional[AbortSignal] = None, *, timeout: Optional[float] = None,
                        cancel_on_abort: bool = True,
                        **fields: Any) -> Union[s.RunResult, s.RunAccepted]:
        """Wait mode: the RunResult once the run settled, or RunAccepted when ``timeout`` seconds (the
        gateway's limit when None; ``seconds`` is its older name) ran out first or a dialog holds pi's
        answer (``disposition: awaiting_approval``). A wait that ``signal`` or a KeyboardInterrupt
        ends cancels the run too (``Prefer: cancel-on-disconnect``), unless ``cancel_on_abort=False``."""
        limit = timeout if timeout is not None else seconds
        prefer = "wait" if limit is None else f"wait={max(1, math.ceil(limit))}"
        if cancel_on_abort:
            prefer += ", cancel-on-disconnect"
        return cast(Union[s.RunResult, s.RunAccepted], self._http.json(
            "POST", "/v1/sessions/{id}/prompt", params={"id": session_id}, body=run_body(message, fields),
            headers={"Prefer": prefer}, signal=signal, timeout=None if limit is None else limit + 30))

    def prompt_stream(self, session_id: str, message: str, signal: Optional[AbortSignal] = None,
                      **fields: Any) -> RunStream:
        """The run as it happens, from pi's answer through the ``agent_settled`` that ends it; a run
        that died with its gateway or node (an unclean stop) raises ``RunLost``."""
        return self._run_stream("prompt", session_id, run_body(message, fields), signal)

    def steer_stream(self, session_id: str, message: str, signal: Optional[AbortSignal] = None,
                     **fields: Any) -> RunStream:
        return self._run_stream("steer", session_id, run_body(message, fields), signal)

    def follow_up_stream(self, session_id: str, message: str, signal: Optional[AbortSignal] = None,
                         **fields: Any) -> RunStream:
        return self._run_stream("follow-up", session_id, run_body(message, fields), signal)

    def abort(self, session_id: str, signal: Optional[AbortSignal] = None) -> None:
        self._http.json("POST", "/v1/sessions/{id}/abort", params={"id": session_id}, signal=signal)

    def bash(self, session_id: str, command: str, signal: Optional[AbortSignal] = None) -> s.BashResult:
        return cast(s.BashResult, self._http.json(
            "POST", "/v1/sessions/{id}/bash", params={"id": session_id}, body={"command": command}, signal=signal))

    def bash_stream(self, session_id: str, command: str, signal: Optional[AbortSignal] = None) -> EventStream:
        """``bash_execution_update`` events as output arrives, then pi's ``response``."""
        own = command_events()
        body = {"command": command}
        plan = StreamPlan(session_id, lambda: self._post_stream(session_id, "bash/stream", body, signal),
                          own["ends"], True, own["accept"], own["types"],
                          resume=lambda after: self._post_stream(session_id, "bash/stream", body, signal, after))
        return self._stream(plan, signal)

    def last_assistant_text(self, session_id: str, signal: Optional[AbortSignal] = None) -> s.LastAssistantText:
        return cast(s.LastAssistantText, self._http.json(
            "GET", "/v1/sessions/{id}/last-assistant-text", params={"id": session_id}, signal=signal))

    # Events

    def events(self, session_id: str, after: Optional[int] = None, types: Optional[List[str]] = None,
               follow_resumes: bool = False, signal: Optional[AbortSignal] = None) -> EventStream:
        """The session's events; ends after ``session_exit`` unless ``follow_resumes`` and it says
        ``resumable: true`` (the session hibernated): then it keeps reconnecting until it runs again."""
        joined = ",".join(types) if types else None

        def ends(event: Dict[str, Any]) -> bool:
            return event["type"] == "session_exit" and not (follow_resumes and event.get("resumable") is True)

        def open_() -> Response:
            return self._http.send("GET", "/v1/sessions/{id}/events", params={"id": session_id},
                                   query={"after": after, "types": joined},
                                   headers={"Accept": "text/event-stream"}, signal=signal,
                                   timeout=self._http.stream_timeout)

        return self._stream(StreamPlan(session_id, open_, ends, False, None, joined), signal)

    def all_events(self, types: Optional[List[str]] = None, signal: Optional[AbortSignal] = None) -> Iterator[HubEvent]:
        """Every session's live events as ``(session_id, seq, event)``; what a cut missed is read back."""
        return all_events(self._http, ",".join(types) if types else None, signal, self._retry_delay,
                          self._max_reconnects)

    # Plumbing

    def _stream(self, plan: StreamPlan, signal: Optional[AbortSignal]) -> EventStream:
        return EventStream(self._http, plan, signal, self._retry_delay, self._max_reconnects)

    def _run_stream(self, kind: str, session_id: str, body: Dict[str, Any],
                    signal: Optional[AbortSignal]) -> RunStream:
        tail = f"{kind}/stream"
        # A cut is resumed by the same POST with Last-Event-ID: the rest of this run, and pi sees it once.
        plan = StreamPlan(session_id, lambda: self._post_stream(session_id, tail, body, signal),
                          run_end(), True, fails=run_lost,
                          resume=lambda after: self._post_stream(session_id, tail, body, signal, after))
        return RunStream(self._http, plan, signal, self._retry_delay, self._max_reconnects)

    def _post_stream(self, session_id: str, tail: str, body: Dict[str, Any],
                     signal: Optional[AbortSignal], after: Optional[int] = None) -> Response:
        headers = {"Accept": "text/event-stream"}
        if after is not None:
            headers["Last-Event-ID"] = str(after)
        return self._http.send("POST", "/v1/sessions/{id}/" + tail, params={"id": session_id}, body=body,
                               headers=headers, signal=signal, timeout=self._http.stream_timeout)


def _split_params(path: str, path_params: Optional[Mapping[str, Any]], params: Optional[Mapping[str, Any]],
                  query: Optional[Mapping[str, Any]]):
    """(path parameters, query) from request()'s arguments, the deprecated spellings included."""
    if params and path_params is None and all("{" + name + "}" in path for name in params):
        warnings.warn("request(params=...) now means the query string (as in requests and httpx); "
                      "pass path parameters as path_params=", DeprecationWarning, stacklevel=3)
        return params, query
    if params is not None and query is not None:
        raise TypeError("pass the query as params= or query=, not both")
    return path_params, params if params is not None else query
