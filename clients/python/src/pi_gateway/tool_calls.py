"""Client tools: the calls a session's model makes to tools this program runs (declared with
``clientTools`` at create).

``run()`` is the handler-style helper: it sends a prompt in wait mode, answers every call of the
session meanwhile by running the function of the tool's name, and returns the run's result. The
other methods are the routes one by one.
"""

import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Union, cast

from . import schema as s
from .errors import Aborted, GatewayError
from .transport import AbortSignal, Transport

#: What a handler returns: the output text, a list of content blocks, or a whole answer
#: (``{"output": …, "isError": True}``).
ToolOutput = Union[str, List[Dict[str, Any]], Dict[str, Any]]
#: A client tool's implementation: the model's arguments (and the call) in, the output out. An
#: exception becomes an error result the model reads.
ToolHandler = Callable[[Dict[str, Any], s.ToolCall], ToolOutput]


class ToolCalls:
    def __init__(self, transport: Transport):
        self._transport = transport

    def list(self, session_id: str, status: Optional[str] = None, wait: Optional[int] = None,
             signal: Optional[AbortSignal] = None) -> List[s.ToolCall]:
        """A session's calls, oldest first; ``wait`` (seconds) long-polls while the list would be empty."""
        page = cast(s.ToolCallList, self._transport.json(
            "GET", "/v1/sessions/{id}/tool-calls", params={"id": session_id},
            query={"status": status, "wait": wait}, signal=signal, timeout=(wait or 0) + 30,
        ))
        return page["toolCalls"]

    def inbox(self, status: Optional[str] = None, wait: Optional[int] = None,
              signal: Optional[AbortSignal] = None) -> List[s.ToolCall]:
        """Calls across every session the credential may read (for a program serving many)."""
        page = cast(s.ToolCallList, self._transport.json(
            "GET", "/v1/tool-calls", query={"status": status, "wait": wait}, signal=signal,
            timeout=(wait or 0) + 30,
        ))
        return page["toolCalls"]

    def get(self, session_id: str, call_id: str, signal: Optional[AbortSignal] = None) -> s.ToolCall:
        return cast(s.ToolCall, self._transport.json(
            "GET", "/v1/sessions/{id}/tool-calls/{callId}", params={"id": session_id, "callId": call_id},
            signal=signal,
        ))

    def answer(self, call: Mapping[str, Any], answer: Mapping[str, Any],
               signal: Optional[AbortSignal] = None) -> s.ToolCall:
        """The tool's result for the model (409 already answered, 410 the run no longer waits, 422 a wrong shape)."""
        return cast(s.ToolCall, self._transport.json(
            "POST", "/v1/sessions/{id}/tool-calls/{callId}", params={"id": call["sessionId"], "callId": call["id"]},
            body=dict(answer), signal=signal,
        ))

    def handle(self, call: s.ToolCall, tools: Mapping[str, ToolHandler],
               signal: Optional[AbortSignal] = None) -> s.ToolCall:
        """Runs the handler of the call's tool and answers with what it returns (an exception, or no
        handler at all, is an error result)."""
        try:
            handler = tools.get(call["name"])
            if handler is None:
                raise LookupError("This program has no handler for the tool " + call["name"])
            output = handler(cast(Dict[str, Any], call.get("arguments") or {}), call)
            answer: Dict[str, Any] = output if isinstance(output, dict) else {"output": output}
        except Exception as error:  # the model reads it, as a failed tool's output
            answer = {"output": str(error) or type(error).__name__, "isError": True}
        return self.answer(call, answer, signal)

    def run(self, session_id: str, message: str, tools: Mapping[str, ToolHandler], seconds: Optional[int] = None,
            poll_seconds: int = 5, signal: Optional[AbortSignal] = None,
            **fields: Any) -> Union[s.RunResult, s.RunAccepted]:
        """Sends ``message`` and answers the session's tool calls with ``tools`` (``{name: fn}``) until
        the run ends; returns its result (RunResult), or RunAccepted when ``seconds`` ran out first.
        A handler's exception is the model's error result; an error of the answering itself is raised."""
        stop = AbortSignal()
        unlink = signal.on_abort(stop.abort) if signal is not None else (lambda: None)
        failures: List[BaseException] = []

        def answer_calls() -> None:
            try:
                while not stop.aborted:
                    for call in self.list(session_id, status="pending", wait=poll_seconds, signal=stop):
                        try:
                            self.handle(call, tools, stop)
                        except GatewayError as error:
                            # Another answer won, or the run stopped waiting: nothing left to do.
                            if error.status not in (409, 410):
                                raise
            except Aborted:
                pass
            except BaseException as error:  # raised in the caller's thread below
                failures.append(error)

        worker = threading.Thread(target=answer_calls, name="pi-gateway-tool-calls", daemon=True)
        worker.start()
        try:
            prefer = "wait" if seconds is None else "wait=" + str(seconds)
            result = self._transport.json(
                "POST", "/v1/sessions/{id}/prompt", params={"id": session_id},
                body={"message": message, **fields}, headers={"prefer": prefer}, signal=signal,
                timeout=(seconds or 3600) + 30,
            )
        finally:
            stop.abort()
            worker.join()
            unlink()
        if failures:
            raise failures[0]
        return cast(Union[s.RunResult, s.RunAccepted], result)
