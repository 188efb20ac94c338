"""Typed events: a class per event type of openapi.yaml (generated into ``event_types``), with the
helpers the OpenAI and Anthropic SDKs taught people to expect (``text_stream``, ``final_message()``,
``final_text()``).

Each event keeps the JSON it came from in ``raw`` and is that dict too (a ``dict`` subclass holding
the same keys: ``event["type"]``, ``event.get("runId")``, ``json.dumps(event)``, ``event == {...}``),
so code written against the dict events keeps working. Every field of the event's schema is an
attribute in snake_case (``RunLimitReached.limit``, ``SessionStatus.status``; None when absent).
``parse_event`` picks the class by ``type`` from ``EVENT_CLASSES``, which holds one for every type
in the spec (a test fails otherwise); a type only a newer gateway sends becomes a plain ``Event``.
The classes below add derived fields to the generated ones (``MessageUpdate.text_delta``,
``MessageEnd.text``, booleans that are never None). Units are the wire's: ``id`` is the event's
sequence number in the session's log; times stay as the gateway sends them (ISO strings,
milliseconds where a field says ``Ms``).
"""

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, Dict, Iterable, Iterator, List, Mapping, Optional, Type

from . import event_types as generated
from .event_base import Event, Raw
from .event_types import *  # noqa: F401,F403  (every generated class, re-exported; some replaced below)


@dataclass(eq=False)
class StreamOpen(generated.StreamOpen):
    """The first frame: where the stream joined (``after``) and, on a run or bash stream, the
    command's ``run_id`` (``runId``, or a bash stream's ``commandId``); ``resumed`` on a resumed POST."""

    after: Optional[int] = None
    run_id: Optional[str] = None
    resumed: bool = False

    @classmethod
    def _fields(cls, raw: Raw) -> Dict[str, Any]:
        return {**super()._fields(raw), "run_id": raw.get("runId") or raw.get("commandId"),
                "resumed": raw.get("resumed") is True}


@dataclass(eq=False)
class Response(generated.Response):
    """pi's answer to the command (``success``, ``data``; ``data["disposition"]`` for a prompt; the
    command's id, the JSON's ``"id"``, is ``command_id``)."""

    success: bool = False

    @classmethod
    def _fields(cls, raw: Raw) -> Dict[str, Any]:
        return {**super()._fields(raw), "success": raw.get("success") is True}


@dataclass(eq=False)
class MessageUpdate(generated.MessageUpdate):
    """A delta of the message being written; ``text_delta`` is its text, when it is text."""

    delta_type: Optional[str] = None
    text_delta: Optional[str] = None

    @classmethod
    def _fields(cls, raw: Raw) -> Dict[str, Any]:
        inner = raw.get("assistantMessageEvent") or {}
        kind = inner.get("type")
        return {**super()._fields(raw), "delta_type": kind,
                "text_delta": inner.get("delta") if kind == "text_delta" else None}


def message_text(message: Optional[Raw]) -> str:
    """The text blocks of a message, joined."""
    content = (message or {}).get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")


@dataclass(eq=False)
class MessageEnd(generated.MessageEnd):
    """A finished message (user, assistant or tool result); ``text`` its text blocks joined."""

    message: Raw = field(default_factory=dict, repr=False)
    role: Optional[str] = None
    text: str = ""

    @classmethod
    def _fields(cls, raw: Raw) -> Dict[str, Any]:
        message = raw.get("message") or {}
        return {**super()._fields(raw), "message": message, "role": message.get("role"), "text": message_text(message)}


@dataclass(eq=False)
class ToolExecutionEnd(generated.ToolExecutionEnd):
    """A tool finished: its ``result`` and whether it was an error."""

    is_error: bool = False

    @classmethod
    def _fields(cls, raw: Raw) -> Dict[str, Any]:
        return {**super()._fields(raw), "is_error": raw.get("isError") is True}


@dataclass(eq=False)
class ToolCallRequested(generated.ToolCallRequested):
    """The model called one of the session's client tools: the program answers it."""

    @classmethod
    def _fields(cls, raw: Raw) -> Dict[str, Any]:
        call = raw.get("toolCall") or {}
        return {**super()._fields(raw), "tool_call_id": raw.get("toolCallId") or call.get("id"),
                "name": raw.get("name") or call.get("name"), "arguments": raw.get("arguments", call.get("arguments")),
                "run_id": raw.get("runId") or call.get("runId")}


@dataclass(eq=False)
class ApprovalRequested(generated.ApprovalRequested):
    """A dialog opened (an extension asks): answer ``approval`` through ``approvals.answer``."""

    approval: Raw = field(default_factory=dict, repr=False)

    @classmethod
    def _fields(cls, raw: Raw) -> Dict[str, Any]:
        return {**super()._fields(raw), "approval": raw.get("approval") or {}}


@dataclass(eq=False)
class ApprovalResolved(ApprovalRequested, generated.ApprovalResolved):
    """A dialog was answered, expired or cancelled (an ``ApprovalRequested`` too, as before)."""

    TYPE: ClassVar[str] = "approval_resolved"


@dataclass(eq=False)
class AgentSettled(generated.AgentSettled):
    """The run's end: pi will do nothing more on its own."""

    aborted: bool = False

    @classmethod
    def _fields(cls, raw: Raw) -> Dict[str, Any]:
        return {**super()._fields(raw), "aborted": raw.get("aborted") is True}


@dataclass(eq=False)
class Gap(generated.Gap):
    """Events the log no longer held were skipped (``lost`` of them, when known)."""

    after: Optional[int] = None
    first_available: Optional[int] = None
    lost: Optional[int] = None


@dataclass(eq=False)
class SessionExit(generated.SessionExit):
    """pi exited (or the session was deleted or hibernated: ``resumable``)."""

    resumable: bool = False

    @classmethod
    def _fields(cls, raw: Raw) -> Dict[str, Any]:
        return {**super()._fields(raw), "resumable": raw.get("resumable") is True}


@dataclass(eq=False)
class BashExecutionUpdate(generated.BashExecutionUpdate):
    """Output of a streamed bash command so far (``delta``)."""

    delta: str = ""

    @classmethod
    def _fields(cls, raw: Raw) -> Dict[str, Any]:
        return {**super()._fields(raw), "delta": raw.get("delta") or ""}


_refined: List[Type[Event]] = [StreamOpen, Response, MessageUpdate, MessageEnd, ToolExecutionEnd, ToolCallRequested,
                               ApprovalRequested, ApprovalResolved, AgentSettled, Gap, SessionExit, BashExecutionUpdate]

#: The class of every event type in openapi.yaml, by ``type`` (read-only).
EVENT_CLASSES: Mapping[str, Type[Event]] = MappingProxyType(
    {**generated.EVENT_CLASSES, **{str(cls.TYPE): cls for cls in _refined}})


def parse_event(raw: Raw, id: Optional[int] = None) -> Event:
    """The typed event for a decoded ``data:`` object (``Event`` for a type the spec this client was
    generated from does not have)."""
    cls = EVENT_CLASSES.get(str(raw.get("type")), Event)
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
