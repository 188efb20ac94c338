"""AsyncPiGateway: the client for asyncio programs, beside the synchronous PiGateway.

Standard library only, like the rest of the package: HTTP/1.1 over ``asyncio.open_connection``
(one connection per request, ``Connection: close``), which is all a client of this API needs —
JSON requests and Server-Sent Events read as they arrive. No dependency means nothing to install
beside the package and nothing that pins the caller's own HTTP library (see README, "Async").

Names, arguments and units are the sync client's: durations in seconds (floats), ``params`` the
query string and ``path_params`` the ``{name}``s of a path, events typed (``events.py``). Cancel a
call by cancelling its task (no AbortSignal: asyncio has cancellation).
"""

import asyncio
import codecs
import json
import math
import ssl
from typing import Any, AsyncIterator, Callable, Dict, List, Mapping, Optional, Tuple, Union, cast
from urllib.parse import urlsplit

from . import schema as s
from .client import _split_params
from .errors import GatewayError, StreamInterrupted
from .events import Event, RunHelpers, parse_event
from .fields import run_body
from .sse import LineParser
from .streams import command_events, run_end, run_lost
from .transport import Transport
from .aio_tool_calls import AsyncToolCalls


class AsyncResponse:
    """An open answer: ``status``, ``headers`` (lower-case names), and the body to read."""

    def __init__(self, status: int, reason: str, headers: Dict[str, str], reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter, idle_timeout: Optional[float]):
        self.status = status
        self.reason = reason
        self.headers = headers
        self._reader = reader
        self._writer = writer
        self._idle = idle_timeout

    async def _read(self, op: Any) -> Any:
        return await asyncio.wait_for(op, self._idle) if self._idle else await op

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives (chunked, sized or to the end of the connection)."""
        if self.status in (204, 304):
            return
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            while True:
                line = await self._read(self._reader.readline())
                if not line:
                    raise ConnectionError("connection closed inside a chunked body")
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while (await self._read(self._reader.readline())) not in (b"\r\n", b"\n", b""):
                        pass
                    return
                data = await self._read(self._reader.readexactly(size))
                await self._read(self._reader.readexactly(2))
                yield data
        length = self.headers.get("content-length")
        if length is not None:
            if int(length) > 0:
                yield await self._read(self._reader.readexactly(int(length)))
            return
        while True:
            data = await self._read(self._reader.read(65536))
            if not data:
                return
            yield data

    async def read(self) -> bytes:
        try:
            return b"".join([chunk async for chunk in self.chunks()])
        finally:
            self.close()

    async def json(self) -> Any:
        text = await self.read()
        return json.loads(text) if text else None

    def close(self) -> None:
        self._writer.close()


class AsyncTransport:
    """The one place the async client makes requests: URL, auth, JSON, problem+json on failure."""

    def __init__(self, base_url: str, token: Optional[str] = None, headers: Optional[Mapping[str, str]] = None,
                 timeout: float = 300.0, stream_timeout: float = 90.0):
        self._urls = Transport(base_url, token, headers, timeout, stream_timeout)
        parts = urlsplit(base_url)
        self._tls = parts.scheme == "https"
        self._host = parts.hostname or "127.0.0.1"
        self._port = parts.port or (443 if self._tls else 80)
        self._netloc = parts.netloc
        self._token = token
        self._headers = dict(headers or {})
        self.timeout = timeout
        self.stream_timeout = stream_timeout

    async def send(self, method: str, template: str, params: Optional[Mapping[str, Any]] = None,
                   query: Optional[Mapping[str, Any]] = None, body: Any = None,
                   headers: Optional[Mapping[str, str]] = None, timeout: Optional[float] = None) -> AsyncResponse:
        """Sends one request; a non-2xx answer is raised as GatewayError, anything else returned open.
        ``timeout`` bounds the connect and each wait for more of the answer (seconds)."""
        limit = timeout or self.timeout
        all_headers: Dict[str, str] = {"Host": self._netloc, "Accept": "application/json", **self._headers}
        if self._token:
            all_headers["Authorization"] = f"Bearer {self._token}"
        data = b""
        if isinstance(body, (bytes, bytearray)):
            data = bytes(body)
            all_headers["Content-Type"] = "application/octet-stream"
        elif body is not None:
            data = json.dumps(body).encode("utf-8")
            all_headers["Content-Type"] = "application/json"
        all_headers.update(headers or {})
        all_headers["Content-Length"] = str(len(data))
        all_headers["Connection"] = "close"
        target = self._urls.path(template, params, query)
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(self._host, self._port, ssl=ssl.create_default_context() if self._tls else None),
            limit)
        try:
            head = f"{method} {target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in all_headers.items())
            writer.write(head.encode("latin-1") + b"\r\n" + data)
            await writer.drain()
            status, reason, answer_headers = await asyncio.wait_for(_read_head(reader), limit)
        except BaseException:
            writer.close()
            raise
        res = AsyncResponse(status, reason, answer_headers, reader, writer, limit)
        if status >= 400:
            raise GatewayError.from_body(status, reason, await res.read(), answer_headers.get("retry-after"))
        return res

    async def json(self, method: str, template: str, **kwargs: Any) -> Any:
        return await (await self.send(method, template, **kwargs)).json()


async def _read_head(reader: asyncio.StreamReader) -> Tuple[int, str, Dict[str, str]]:
    while True:
        line = (await reader.readline()).decode("latin-1").rstrip("\r\n")
        if not line:
            raise ConnectionError("connection closed before the answer")
        _, code, *rest = line.split(" ", 2)
        headers: Dict[str, str] = {}
        while True:
            field = (await reader.readline()).decode("latin-1").rstrip("\r\n")
            if not field:
                break
            name, _, value = field.partition(":")
            headers[name.strip().lower()] = value.strip()
        if not code.startswith("1"):  # skip 100 Continue and friends
            return int(code), rest[0] if rest else "", headers


class AsyncEventStream:
    """Iterate it once (``async for event in stream``); ``aclose()`` or ``async with`` ends it early.
    Resumes after a cut with ``Last-Event-ID`` as the sync EventStream does."""

    def __init__(self, open: Callable[[Optional[int]], Any], ends: Callable[[Dict[str, Any]], bool],
                 run: bool, accept: Optional[Callable[[Dict[str, Any]], bool]] = None,
                 retry_delay: float = 0.5, max_attempts: int = 10):
        self.last_event_id: Optional[int] = None
        self.reconnects = 0
        self._open = open
        self._ends = ends
        self._run_stream = run
        self._accept = accept
        self._retry = retry_delay
        self._max_attempts = max_attempts
        self._res: Optional[AsyncResponse] = None
        self._iter: Optional[AsyncIterator[Event]] = None

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
        self._res = await self._open(None)
        opened = False
        try:
            while True:
                resume_from: Optional[int] = None
                clean_end = False
                parser = LineParser(self._set_retry)
                decoder = codecs.getincrementaldecoder("utf-8-sig")("replace")
                try:
                    async for chunk in self._res.chunks():
                        for frame in parser.feed(decoder.decode(chunk)):
                            try:
                                event = json.loads(frame.data)
                            except ValueError:
                                continue
                            if not isinstance(event, dict) or not isinstance(event.get("type"), str):
                                continue
                            seq: Optional[int] = None
                            if frame.id is not None and frame.id.isdigit():
                                seq = int(frame.id)
                                if self.last_event_id is not None and seq <= self.last_event_id:
                                    continue
                                self.last_event_id = seq
                            kind = event["type"]
                            if kind == "stream_open":
                                if self.last_event_id is None and isinstance(event.get("after"), int):
                                    self.last_event_id = event["after"]
                                if opened:
                                    continue
                                opened = True
                            elif kind == "dropped":
                                at = event.get("resumeFrom")
                                resume_from = int(at) if isinstance(at, int) else self.last_event_id
                                break
                            if self._accept and kind not in ("stream_open", "gap") and not self._accept(event):
                                continue
                            failure = run_lost(event) if self._run_stream else None
                            if failure is not None:
                                raise failure
                            typed = parse_event(event, seq)
                            self._keep(typed)
                            yield typed
                            if self._ends(event):
                                return
                        if resume_from is not None:
                            break
                    clean_end = resume_from is None
                except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError, ValueError):
                    pass
                self._res.close()
                if clean_end and self._run_stream:
                    raise StreamInterrupted("The stream ended before the run did", _text(self.last_event_id))
                if resume_from is not None:
                    self.last_event_id = resume_from
                res = await self._reconnect()
                if res is None:
                    return
                self._res = res
        finally:
            if self._res is not None:
                self._res.close()

    async def _reconnect(self) -> Optional[AsyncResponse]:
        after = self.last_event_id
        if after is None:
            raise StreamInterrupted("The stream broke before it said where it joined; cannot resume")
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
            except (OSError, asyncio.TimeoutError) as error:
                last_error = error
        raise StreamInterrupted(f"Could not reconnect after event {after}: {last_error}", str(after))


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
                              **fields: Any) -> Union[s.RunResult, s.RunAccepted]:
        """Wait mode: the RunResult once the run settled, or RunAccepted when ``timeout`` seconds (the
        gateway's limit when None) ran out first or a dialog holds pi's answer."""
        prefer = "wait" if timeout is None else f"wait={max(1, math.ceil(timeout))}"
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

        return AsyncEventStream(open_, ends, False, None, self._retry_delay, self._max_reconnects)

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
