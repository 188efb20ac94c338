"""pi-gateway's Python client: standard library only, typed from openapi.yaml (``schema``),
sync (``PiGateway``) and asyncio (``AsyncPiGateway``), typed events (``events``), streams that
resume with Last-Event-ID and raise when they cannot, an approvals helper, GatewayError."""

from . import events, schema
from .aio import AsyncEventStream, AsyncPiGateway, AsyncRunStream
from .aio_tool_calls import AsyncToolCalls, AsyncToolHandler
from .approvals import Approvals
from .client import PiGateway
from .errors import Aborted, GatewayError, RunLost, StreamInterrupted
from .events import Event, parse_event
from .sse import Frame, LineParser, parse_chunks
from .streams import EventStream, RunStream
from .tool_calls import ToolCalls, ToolHandler, ToolOutput
from .transport import AbortSignal
from .workspace import Workspace

__all__ = [
    "Aborted", "AbortSignal", "Approvals", "AsyncEventStream", "AsyncPiGateway", "AsyncRunStream",
    "AsyncToolCalls", "AsyncToolHandler", "Event",
    "EventStream", "Frame", "GatewayError", "LineParser", "PiGateway", "RunLost", "RunStream",
    "StreamInterrupted", "ToolCalls", "ToolHandler", "ToolOutput", "Workspace", "events", "parse_chunks", "parse_event", "schema",
]
