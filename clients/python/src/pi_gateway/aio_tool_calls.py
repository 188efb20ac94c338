"""Client tools for AsyncPiGateway: the async twin of ``tool_calls.ToolCalls``.

``run()`` sends a prompt in wait mode and, in a task beside it, answers every call of the session
with the handler of the tool's name (a plain function or a coroutine function), then returns the
run's result. The other methods are the routes one by one. Durations are seconds.
"""

import asyncio
import inspect
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Dict, List, Mapping, Optional, Union, cast

from . import schema as s
from .errors import GatewayError
from .fields import run_body
from .tool_calls import ToolOutput

if TYPE_CHECKING:
    from .aio import AsyncTransport

#: A client tool's implementation: the model's arguments (and the call) in, the output out, or an
#: awaitable of it. An exception becomes an error result the model reads.
AsyncToolHandler = Callable[[Dict[str, Any], s.ToolCall], Union[ToolOutput, Awaitable[ToolOutput]]]


class AsyncToolCalls:
    def __init__(self, transport: "AsyncTransport"):
        self._transport = transport

    async def list(self, session_id: str, status: Optional[str] = None,
                   wait: Optional[int] = None) -> List[s.ToolCall]:
        """A session's calls, oldest first; ``wait`` (seconds) long-polls while the list would be empty."""
        page = cast(s.ToolCallList, await self._transport.json(
            "GET", "/v1/sessions/{id}/tool-calls", params={"id": session_id},
            query={"status": status, "wait": wait}, timeout=(wait or 0) + 30))
        return page["toolCalls"]

    async def inbox(self, status: Optional[str] = None, wait: Optional[int] = None) -> List[s.ToolCall]:
        """Calls across every session the credential may read."""
        page = cast(s.ToolCallList, await self._transport.json(
            "GET", "/v1/tool-calls", query={"status": status, "wait": wait}, timeout=(wait or 0) + 30))
        return page["toolCalls"]

    async def get(self, session_id: str, call_id: str) -> s.ToolCall:
        return cast(s.ToolCall, await self._transport.json(
            "GET", "/v1/sessions/{id}/tool-calls/{callId}", params={"id": session_id, "callId": call_id}))

    async def answer(self, call: Mapping[str, Any], answer: Mapping[str, Any]) -> s.ToolCall:
        """The tool's result for the model (409 already answered, 410 the run no longer waits, 422 a wrong shape)."""
        return cast(s.ToolCall, await self._transport.json(
            "POST", "/v1/sessions/{id}/tool-calls/{callId}", params={"id": call["sessionId"], "callId": call["id"]},
            body=dict(answer)))

    async def handle(self, call: s.ToolCall, tools: Mapping[str, AsyncToolHandler]) -> s.ToolCall:
        """Runs the handler of the call's tool and answers with what it returns (an exception, or no
        handler at all, is an error result)."""
        try:
            handler = tools.get(call["name"])
            if handler is None:
                raise LookupError("This program has no handler for the tool " + call["name"])
            output = handler(cast(Dict[str, Any], call.get("arguments") or {}), call)
            if inspect.isawaitable(output):
                output = await output
            answer: Dict[str, Any] = output if isinstance(output, dict) else {"output": output}
        except Exception as error:  # the model reads it, as a failed tool's output
            answer = {"output": str(error) or type(error).__name__, "isError": True}
        return await self.answer(call, answer)

    async def run(self, session_id: str, message: str, tools: Mapping[str, AsyncToolHandler],
                  timeout: Optional[float] = None, poll_seconds: int = 5,
                  **fields: Any) -> Union[s.RunResult, s.RunAccepted]:
        """Sends ``message`` and answers the session's tool calls with ``tools`` (``{name: fn}``) until
        the run ends; returns its result (RunResult), or RunAccepted when ``timeout`` seconds ran out
        first. A handler's exception is the model's error result; an error of the answering is raised."""

        # A flag beside cancel(): Python 3.11's asyncio.wait_for can swallow a cancellation that lands
        # as its inner read completes, and this loop then polled on forever (the run's caller hung).
        done = asyncio.Event()

        async def answer_calls() -> None:
            while not done.is_set():
                for call in await self.list(session_id, status="pending", wait=poll_seconds):
                    if done.is_set():
                        return
                    try:
                        await self.handle(call, tools)
                    except GatewayError as error:
                        # Another answer won, or the run stopped waiting: nothing left to do.
                        if error.status not in (409, 410):
                            raise

        worker = asyncio.ensure_future(answer_calls())
        prefer = "wait" if timeout is None else f"wait={max(1, int(-(-timeout // 1)))}"
        prompt = asyncio.ensure_future(self._transport.json(
            "POST", "/v1/sessions/{id}/prompt", params={"id": session_id}, body=run_body(message, fields),
            headers={"Prefer": prefer}, timeout=(timeout or 3600) + 30))
        try:
            await asyncio.wait([prompt, worker], return_when=asyncio.FIRST_COMPLETED)
            if worker.done() and worker.exception() is not None:
                prompt.cancel()
                raise cast(BaseException, worker.exception())
            return cast(Union[s.RunResult, s.RunAccepted], await prompt)
        finally:
            done.set()
            worker.cancel()
            prompt.cancel()
            await asyncio.gather(worker, prompt, return_exceptions=True)
