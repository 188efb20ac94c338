"""pi-gateway's Python client: standard library only, typed from openapi.yaml (``schema``),
streams as iterators that resume with Last-Event-ID, an approvals helper, GatewayError."""

from . import schema
from .approvals import Approvals
from .client import PiGateway
from .errors import Aborted, GatewayError, RunLost, StreamInterrupted
from .sse import Frame, LineParser, parse_chunks
from .streams import EventStream
from .tool_calls import ToolCalls, ToolHandler, ToolOutput
from .transport import AbortSignal
from .workspace import Workspace

__all__ = [
    "Aborted", "AbortSignal", "Approvals", "EventStream", "Frame", "GatewayError", "LineParser",
    "PiGateway", "RunLost", "StreamInterrupted", "ToolCalls", "ToolHandler", "ToolOutput", "Workspace", "parse_chunks", "schema",
]
