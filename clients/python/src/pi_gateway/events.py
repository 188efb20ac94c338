"""Typed events: one dataclass per event type a run stream carries, and the helpers the OpenAI and
Anthropic SDKs taught people to expect (``text_stream``, ``final_message()``, ``final_text()``).

Each event keeps the JSON it came from in ``raw`` and is that dict too (a ``dict`` subclass holding
the same keys: ``event["type"]``, ``event.get("runId")``, ``json.dumps(event)``, ``event == {...}``),
so code written against the dict events keeps working.
``parse_event`` picks the class by ``type``; a type this client does not know becomes ``Event``.
Units are the wire's: ``id`` is the event's sequence number in the session's log; times inside
``raw`` stay as the gateway sends them (ISO strings, milliseconds where a field says ``Ms``).
"""

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Optional, Type

Raw = Dict[str, Any]


@dataclass(eq=False)
class Event(Dict[str, Any]):
    """Any event: its ``type``, its log position ``id`` (None for frames outside the log such as
    ``stream_open``) and the decoded JSON in ``raw``, whose keys the event also holds as a dict
    (equality and JSON are the dict's)."""

    type: str
    raw: Raw = field(repr=False)
    id: Optional[int] = None

    def __post_init__(self) -> None:
        dict.update(self, self.raw)

    @classmethod
    def _fields(cls, raw: Raw) -> Dict[str, Any]:
        return {}


@dataclass(eq=False)
class StreamOpen(Event):
    """The first frame: where the stream joined (``after``) and, on a run stream, its ``run_id``."""

    after: Optional[int] = None
    run_id: Optional[str] = None
    resumed: bool = False

    @classmethod
    def _fields(cls, raw: Raw) -> Dict[str, Any]:
        return {"after": raw.get("after"), "run_id": raw.get("runId") or raw.get("commandId"),
                "resumed": raw.get("resumed") is True}


@dataclass(eq=False)
class Response(Event):
    """pi's answer to the command (``success``, ``data``; ``data["disposition"]`` for a prompt)."""

    success: bool = False
    data: Any = None
    command: Optional[str] = None

    @classmethod
    def _fields(cls, raw: Raw) -> Dict[str, Any]:
        return {"success": raw.get("success") is True, "data": raw.get("data"), "command": raw.get("command")}


@dataclass(eq=False)
class MessageUpdate(Event):
    """A delta of the message being written; ``text_delta`` is its text, when it is text."""

    delta_type: Optional[str] = None
    text_delta: Optional[str] = None

    @classmethod
    def _fields(cls, raw: Raw) -> Dict[str, Any]:
        inner = raw.get("assistantMessageEvent") or {}
        kind = inner.get("type")
        return {"delta_type": kind, "text_delta": inner.get("delta") if kind == "text_delta" else None}


def message_text(message: Optional[Raw]) -> str:
    """The text blocks of a message, joined."""
    content = (message or {}).get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")


@dataclass(eq=False)
class MessageEnd(Event):
    """A finished message (user, assistant or tool result); ``text`` its text blocks joined."""

    message: Raw = field(default_factory=dict, repr=False)
    role: Optional[str] = None
    text: str = ""

    @classmethod
    def _fields(cls, raw: Raw) -> Dict[str, Any]:
        message = raw.get("message") or {}
        return {"message": message, "role": message.get("role"), "text": message_text(message)}


@dataclass(eq=False)
class ToolExecutionStart(Event):
    """pi began running a tool: ``tool_call_id``, ``tool_name`` and ``args``."""

    tool_call_id: Optional[str] = None
    tool_name: Optional[str] = None
    args: Any = None

    @classmethod
    def _fields(cls, raw: Raw) -> Dict[str, Any]:
        return {"tool_call_id": raw.get("toolCallId"), "tool_name": raw.get("toolName"), "args": raw.get("args")}


@dataclass(eq=False)
class ToolExecutionEnd(Event):
    """A tool finished: its ``result`` and whether it was an error."""

    tool_call_id: Optional[str] = None
    tool_name: Optional[str] = None
    result: Any = None
    is_error: bool = False

    @classmethod
    def _fields(cls, raw: Raw) -> Dict[str, Any]:
        return {"tool_call_id": raw.get("toolCallId"), "tool_name": raw.get("toolName"),
                "result": raw.get("result"), "is_error": raw.get("isError") is True}


@dataclass(eq=False)
class ToolCallRequested(Event):
    """The model called one of the session's client tools: the program answers it."""

    tool_call_id: Optional[str] = None
    name: Optional[str] = None
    arguments: Any = None
    run_id: Optional[str] = None

    @classmethod
    def _fields(cls, raw: Raw) -> Dict[str, Any]:
        call = raw.get("toolCall") or {}
        return {"tool_call_id": raw.get("toolCallId") or call.get("id"), "name": raw.get("name") or call.get("name"),
                "arguments": raw.get("arguments", call.get("arguments")), "run_id": raw.get("runId") or call.get("runId")}


@dataclass(eq=False)
class ApprovalRequested(Event):
    """A dialog opened (an extension asks): answer ``approval`` through ``approvals.answer``."""

    approval: Raw = field(default_factory=dict, repr=False)

    @classmethod
    def _fields(cls, raw: Raw) -> Dict[str, Any]:
        return {"approval": raw.get("approval") or {}}


@dataclass(eq=False)
class ApprovalResolved(ApprovalRequested):
    """A dialog was answered, expired or cancelled."""


@dataclass(eq=False)
class AgentSettled(Event):
    """The run's end: pi will do nothing more on its own."""

    aborted: bool = False

    @classmethod
    def _fields(cls, raw: Raw) -> Dict[str, Any]:
        return {"aborted": raw.get("aborted") is True}


@dataclass(eq=False)
class Gap(Event):
    """Events the log no longer held were skipped (``lost`` of them, when known)."""

    after: Optional[int] = None
    first_available: Optional[int] = None
    lost: Optional[int] = None

    @classmethod
    def _fields(cls, raw: Raw) -> Dict[str, Any]:
        return {"after": raw.get("after"), "first_available": raw.get("firstAvailable"), "lost": raw.get("lost")}


@dataclass(eq=False)
class SessionExit(Event):
    """pi exited (or the session was deleted or hibernated: ``resumable``)."""

    reason: Optional[str] = None
    resumable: bool = False

    @classmethod
    def _fields(cls, raw: Raw) -> Dict[str, Any]:
        return {"reason": raw.get("reason"), "resumable": raw.get("resumable") is True}


@dataclass(eq=False)
class BashExecutionUpdate(Event):
    """Output of a streamed bash command so far (``delta``)."""

    delta: str = ""

    @classmethod
    def _fields(cls, raw: Raw) -> Dict[str, Any]:
        return {"delta": raw.get("delta") or ""}


@dataclass(eq=False)
class RunOutput(Event):
    """With ``outputSchema``: the run's structured answer (``output``) or why there is none (``error``)."""

    output: Any = None
    error: Any = None

    @classmethod
    def _fields(cls, raw: Raw) -> Dict[str, Any]:
        return {"output": raw.get("output"), "error": raw.get("error")}


@dataclass(eq=False)
class ErrorEvent(Event):
    """The gateway failed after the stream began (pi did not answer in time, or exited)."""

    status: Optional[int] = None
    code: Optional[str] = None
    detail: Optional[str] = None

    @classmethod
    def _fields(cls, raw: Raw) -> Dict[str, Any]:
        return {"status": raw.get("status"), "code": raw.get("code"), "detail": raw.get("detail")}


_classes: Dict[str, Type[Event]] = {
    "stream_open": StreamOpen, "response": Response, "message_update": MessageUpdate, "message_end": MessageEnd,
    "tool_execution_start": ToolExecutionStart, "tool_execution_end": ToolExecutionEnd,
    "tool_call_requested": ToolCallRequested, "approval_requested": ApprovalRequested,
    "approval_resolved": ApprovalResolved, "agent_settled": AgentSettled, "gap": Gap, "session_exit": SessionExit,
    "bash_execution_update": BashExecutionUpdate, "run_output": RunOutput, "error": ErrorEvent,
}


def parse_event(raw: Raw, id: Optional[int] = None) -> Event:
    """The typed event for a decoded ``data:`` object (``Event`` for types this client does not know)."""
    cls = _classes.get(str(raw.get("type")), Event)
    return cls(type=str(raw.get("type")), raw=raw, id=id, **cls._fields(raw))


class RunHelpers:
    """What a run stream offers beyond iteration. Mixed into the sync and async run streams, which
    feed ``_seen`` with every event they yield."""

    _seen: List[Event]

    def _record(self, event: Event) -> Event:
        self._seen.append(event)
        return event

    @property
    def events_seen(self) -> List[Event]:
        """Every event yielded so far, in order."""
        return list(self._seen)

    def final_message(self) -> Optional[Raw]:
        """The last assistant message of the run (after the stream was consumed)."""
        for event in reversed(self._seen):
            if isinstance(event, MessageEnd) and event.role == "assistant":
                return event.message
        return None

    def final_text(self) -> str:
        """The text of the last assistant message that had text ("" when none had)."""
        for event in reversed(self._seen):
            if isinstance(event, MessageEnd) and event.role == "assistant" and event.text:
                return event.text
        return ""

    def tool_calls(self) -> List[ToolExecutionStart]:
        """The tools pi ran during the run, in order."""
        return [e for e in self._seen if isinstance(e, ToolExecutionStart)]

    def approvals_requested(self) -> List[Raw]:
        """The dialogs that opened during the run."""
        return [e.approval for e in self._seen if isinstance(e, ApprovalRequested) and e.type == "approval_requested"]


def text_deltas(events: Iterable[Event]) -> Iterator[str]:
    """The text deltas among ``events``, in order."""
    for event in events:
        if isinstance(event, MessageUpdate) and event.text_delta:
            yield event.text_delta
