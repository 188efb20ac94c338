"""The base of every typed event (``events`` and the generated ``event_types`` build on it)."""

from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, Optional

Raw = Dict[str, Any]


@dataclass(eq=False)
class Event(Dict[str, Any]):
    """Any event: its ``type``, its log position ``id`` (None for frames outside the log such as
    ``stream_open``) and the decoded JSON in ``raw``, whose keys the event also holds as a dict
    (equality and JSON are the dict's). A type this client has no class for (a gateway newer than
    the client) arrives as a plain ``Event``."""

    #: The event type a subclass stands for (None on the plain ``Event``).
    TYPE: ClassVar[Optional[str]] = None

    type: str
    raw: Raw = field(repr=False)
    id: Optional[int] = None

    def __post_init__(self) -> None:
        dict.update(self, self.raw)

    @classmethod
    def _fields(cls, raw: Raw) -> Dict[str, Any]:
        """The subclass's attributes, read from the event's JSON."""
        return {}
