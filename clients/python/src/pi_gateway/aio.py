"""AsyncPiGateway: the client for asyncio programs, beside the synchronous PiGateway.

Standard library only, like the rest of the package: HTTP/1.1 over ``asyncio.open_connection``
(one connection per request, ``Connection: close``), which is all a client of this API needs —
JSON requests and Server-Sent Events read as they arrive. No dependency means nothing to install
beside the package and nothing that pins the caller's own HTTP library (see README, "Async").

Names, arguments and units are the sync client's: durations in seconds (floats), ``params`` the
query string and ``path_params`` the ``{name}``s of a path, events typed (``events.py``). Cancel a
call by cancelling its task (no AbortSignal: asyncio has cancellation). The HTTP is in
``aio_transport``, the streams (resumed by the sync streams' rules) in ``aio_streams``.
"""

import asyncio
import math
from typing import Any, AsyncIterator, Callable, Dict, List, Mapping, Optional, Union, cast

from . import schema as s
from .aio_streams import AsyncEventStream, AsyncRunStream
from .aio_tool_calls import AsyncToolCalls
from .aio_transport import AsyncResponse, AsyncTransport
from .client import _split_params
from .fields import run_body
from .streams import command_events, run_end

__all__ = ["AsyncApprovals", "AsyncEventStream", "AsyncPiGateway", "AsyncResponse", "AsyncRunStream",
           "AsyncTransport"]


class AsyncApprovals:
    """Waiting for a dialog and answering it, over the inbox's long-poll (as ``Approvals``)."""

    def __init__(self, transport: AsyncTransport):
        self._transport = transport

    async def next(self, session_id: Optional[str] = None, filter: Optional[Callable[[s.Approval], bool]] = None,
                   poll_seconds: int = 30, timeout: Optional[float] = None) -> Optional[s.Approval]:
        """The oldest pending dialog that matches, as soon as there is one (None after ``timeout`` seconds)."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        cursor: Optional[str] = None
        while True:
            left = None if deadline is None else deadline - loop.time()
            if left is not None and left <= 0:
                return None
            wait = max(1, min(poll_seconds, math.ceil(left) if left is not None else poll_seconds))
            page = cast(s.ApprovalList, await self._transport.json(
                "GET", "/v1/approvals", query={"status": "pending", "wait": wait, "cursor": cursor}, timeout=wait + 30))
            for approval in page["approvals"]:
                if approval["status"] != "pending":
                    continue
                if session_id is not None and approval["sessionId"] != session_id:
                    continue
                if filter is None or filter(approval):
                    return approval
            if page["approvals"] or page["hasMore"]:
                cursor = page["nextCursor"]

    async def answer(self, approval: s.Approval, answer: s.ApprovalAnswer) -> s.Approval:
        """Answers a dialog; the resolved approval comes back (409 already answered, 410 expired, 422 misfit)."""
        return cast(s.Approval, await self._transport.json(
            "POST", "/v1/sessions/{id}/approvals/{approvalId}",
            params={"id": approval["sessionId"], "approvalId": approval["id"]}, body=answer))

    async def answer_next(self, decide: Callable[[s.Approval], s.ApprovalAnswer],
                          **options: Any) -> Optional[s.Approval]:
        """Waits for the next matching dialog (options as for ``next``) and answers it with ``decide``'s answer."""
        approval = await self.next(**options)
        if approval is None:
            return None
        return await self.answer(approval, decide(approval))


class AsyncPiGateway:
    """pi-gateway for asyncio. ``async with AsyncPiGateway(url, token) as gw:`` or plain; every
    method is a coroutine except the streams, which are ``async for``-able at once."""

    def __init__(self, base_url: str, token: Optional[str] = None, headers: Optional[Mapping[str, str]] = None,
                 timeout: float = 300.0, stream_timeout: float = 90.0, retry_delay: float = 0.5,
                 max_reconnects: int = 10):
        self._http = AsyncTransport(base_url, token, headers, timeout, stream_timeout)
        self._retry_delay = retry_delay
        self._max_reconnects = max_reconnects
        self.approvals = AsyncApprovals(self._http)
        #: Client tools: ``await tool_calls.run(sid, "…", {"lookup_price": fn})`` answers the calls of a run.
        self.tool_calls = AsyncToolCalls(self._http)

    async def __aenter__(self) -> "AsyncPiGateway":
        return self

    async def __aexit__(self, *_: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Nothing is held between calls (one connection per request); here for ``async with``."""

    # Any operation

    async def request(self, method: str, path: str, *, path_params: Optional[Mapping[str, Any]] = None,
                      params: Optional[Mapping[str, Any]] = None, body: Any = None,
                      headers: Optional[Mapping[str, str]] = None) -> Any:
        """The decoded JSON of the 2xx answer (None for 204); ``params`` is the query string."""
        path_params, query = _split_params(path, path_params, params, None)
        return await self._http.json(method, path, params=path_params, query=query, body=body, headers=headers)

    # Sessions

    async def create_session(self, body: Optional[s.CreateSession] = None) -> s.Session:
        return cast(s.Session, await self._http.json("POST", "/v1/sessions", body=body or {}))

    async def fork_session(self, session_id: str, entry_id: Optional[str] = None, name: Optional[str] = None,
                           idempotency_key: Optional[str] = None) -> s.ForkedSession:
        """A new session of the caller's from this one: its conversation up to ``entry_id`` (inclusive;
        all of it when None) and a copy of its folder. The original is only read."""
        body = {k: v for k, v in {"entryId": entry_id, "name": name}.items() if v is not None}
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key is not None else None
        return cast(s.ForkedSession, await self._http.json(
            "POST", "/v1/sessions/{id}/fork-session", params={"id": session_id}, body=body, headers=headers))

    async def get_session(self, session_id: str) -> s.Session:
        return cast(s.Session, await self._http.json("GET", "/v1/sessions/{id}", params={"id": session_id}))

    async def list_sessions(self, limit: Optional[int] = None, cursor: Optional[str] = None,
                            status: Optional[str] = None, node: Optional[str] = None,
                            principal: Optional[str] = None) -> s.SessionList:
        """One page of sessions, oldest first (100 unless ``limit`` says otherwise); ``nextCursor`` goes on."""
        query = {"limit": limit, "cursor": cursor, "status": status, "node": node, "principal": principal}
        return cast(s.SessionList, await self._http.json("GET", "/v1/sessions", query=query))

    async def all_sessions(self, limit: Optional[int] = None, status: Optional[str] = None,
                           node: Optional[str] = None, principal: Optional[str] = None) -> AsyncIterator[s.Session]:
        """Every session that matches, page after page (``async for``; ``limit`` is the page size)."""
        cursor: Optional[str] = None
        while True:
            page = await self.list_sessions(limit, cursor, status, node, principal)
            for session in page["sessions"]:
                yield session
            cursor = page["nextCursor"]
            if cursor is None:
                return

    async def delete_session(self, session_id: str) -> None:
        await self._http.json("DELETE", "/v1/sessions/{id}", params={"id": session_id})

    # Runs

    async def prompt(self, session_id: str, message: str, **fields: Any) -> s.RunAccepted:
        """Sends a prompt; answers once pi accepted it."""
        return cast(s.RunAccepted, await self._http.json(
            "POST", "/v1/sessions/{id}/prompt", params={"id": session_id}, body=run_body(message, fields)))

    async def prompt_and_wait(self, session_id: str, message: str, timeout: Optional[float] = None,
                              *, cancel_on_abort: bool = True,
                              **fields: Any) -> Union[s.RunResult, s.RunAccepted]:
        """Wait mode: the RunResult once the run settled, or RunAccepted when ``timeout`` seconds (the
        gateway's limit when None) ran out first or a dialog holds pi's answer. A cancelled task
        cancels the run too (``Prefer: cancel-on-disconnect``), unless ``cancel_on_abort=False``."""
        prefer = "wait" if timeout is None else f"wait={max(1, math.ceil(timeout))}"
        if cancel_on_abort:
            prefer += ", cancel-on-disconnect"
        return cast(Union[s.RunResult, s.RunAccepted], await self._http.json(
            "POST", "/v1/sessions/{id}/prompt", params={"id": session_id}, body=run_body(message, fields),
            headers={"Prefer": prefer}, timeout=None if timeout is None else timeout + 30))

    def prompt_stream(self, session_id: str, message: str, **fields: Any) -> AsyncRunStream:
        """The run as it happens, through the ``agent_settled`` that ends it; a cut is resumed by the
        same POST with ``Last-Event-ID`` (pi sees the prompt once); a lost run raises ``RunLost``."""
        return self._run_stream("prompt", session_id, run_body(message, fields))

    def steer_stream(self, session_id: str, message: str, **fields: Any) -> AsyncRunStream:
        return self._run_stream("steer", session_id, run_body(message, fields))

    def follow_up_stream(self, session_id: str, message: str, **fields: Any) -> AsyncRunStream:
        return self._run_stream("follow-up", session_id, run_body(message, fields))

    async def abort(self, session_id: str) -> None:
        await self._http.json("POST", "/v1/sessions/{id}/abort", params={"id": session_id})

    async def bash(self, session_id: str, command: str) -> s.BashResult:
        return cast(s.BashResult, await self._http.json(
            "POST", "/v1/sessions/{id}/bash", params={"id": session_id}, body={"command": command}))

    def bash_stream(self, session_id: str, command: str) -> AsyncEventStream:
        """``bash_execution_update`` events as output arrives, then pi's ``response``."""
        own = command_events()
        return AsyncEventStream(self._poster(session_id, "bash/stream", {"command": command}), own["ends"], True,
                                own["accept"], self._retry_delay, self._max_reconnects)

    async def last_assistant_text(self, session_id: str) -> s.LastAssistantText:
        return cast(s.LastAssistantText, await self._http.json(
            "GET", "/v1/sessions/{id}/last-assistant-text", params={"id": session_id}))

    # Events

    def events(self, session_id: str, after: Optional[int] = None, types: Optional[List[str]] = None,
               follow_resumes: bool = False) -> AsyncEventStream:
        """The session's events, from ``after`` (or live), until ``session_exit`` — unless
        ``follow_resumes`` and it says ``resumable: true`` (the session hibernated): then it keeps
        reconnecting until the session runs again."""
        joined = ",".join(types) if types else None

        def ends(event: Dict[str, Any]) -> bool:
            return event["type"] == "session_exit" and not (follow_resumes and event.get("resumable") is True)

        def open_(last: Optional[int]) -> Any:
            headers = {"Accept": "text/event-stream"}
            if last is not None:
                headers["Last-Event-ID"] = str(last)
            return self._http.send("GET", "/v1/sessions/{id}/events", params={"id": session_id},
                                   query={"after": after if last is None else None, "types": joined},
                                   headers=headers, timeout=self._http.stream_timeout)

        return AsyncEventStream(open_, ends, False, None, self._retry_delay, self._max_reconnects, replayable=True)

    # Plumbing

    def _poster(self, session_id: str, tail: str, body: Dict[str, Any]) -> Callable[[Optional[int]], Any]:
        def open_(last: Optional[int]) -> Any:
            headers = {"Accept": "text/event-stream"}
            if last is not None:
                headers["Last-Event-ID"] = str(last)
            return self._http.send("POST", "/v1/sessions/{id}/" + tail, params={"id": session_id}, body=body,
                                   headers=headers, timeout=self._http.stream_timeout)

        return open_

    def _run_stream(self, kind: str, session_id: str, body: Dict[str, Any]) -> AsyncRunStream:
        return AsyncRunStream(self._poster(session_id, f"{kind}/stream", body), run_end(), True, None,
                              self._retry_delay, self._max_reconnects)
