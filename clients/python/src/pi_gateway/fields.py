"""Keyword arguments in Python's spelling, sent in the API's: ``streaming_behavior="steer"`` and
``output_schema={...}`` become ``streamingBehavior`` and ``outputSchema``. The API's own spelling
passes unchanged; only the names of the keywords are converted, never the values under them."""

from typing import Any, Dict, Mapping


def camel(name: str) -> str:
    """``output_schema`` → ``outputSchema`` (a name without ``_`` is returned as it is)."""
    first, *rest = name.split("_")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


def run_body(message: str, fields: Mapping[str, Any]) -> Dict[str, Any]:
    """A prompt's, steer's or follow-up's body: the message and the other fields, camelCased."""
    return {"message": message, **{camel(key): value for key, value in fields.items()}}
