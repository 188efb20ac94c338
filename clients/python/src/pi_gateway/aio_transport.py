"""HTTP/1.1 for the asyncio client over the standard library's ``asyncio.open_connection`` (one
connection per request, ``Connection: close``): JSON requests, and bodies read as they arrive.

A body is handed on as its bytes come in, never a whole chunk at a time: a stream cut inside an
HTTP chunk still delivers the frames that chunk completed (the first chunk holds ``stream_open``,
which a resume needs). A connection closed early raises ``ConnectionResetError``.
"""

import asyncio
import json
import ssl
from typing import Any, AsyncIterator, Dict, Mapping, Optional, Tuple
from urllib.parse import urlsplit

from .errors import GatewayError
from .transport import Transport

_READ = 65536


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

    async def _some(self, most: int) -> bytes:
        data = await self._read(self._reader.read(most))
        if not data:
            raise ConnectionResetError("connection closed inside the body")
        return data

    async def _line(self) -> bytes:
        line = await self._read(self._reader.readline())
        if not line.endswith(b"\n"):
            raise ConnectionResetError("connection closed inside a chunked body")
        return line

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives (chunked, sized or to the end of the connection), in pieces as read."""
        if self.status in (204, 304):
            return
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            while True:
                size = int((await self._line()).split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while (await self._read(self._reader.readline())) not in (b"\r\n", b"\n", b""):
                        pass
                    return
                while size > 0:
                    data = await self._some(min(size, _READ))
                    size -= len(data)
                    yield data
                await self._line()
        length = self.headers.get("content-length")
        if length is not None:
            left = int(length)
            while left > 0:
                data = await self._some(min(left, _READ))
                left -= len(data)
                yield data
            return
        while True:
            data = await self._read(self._reader.read(_READ))
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


async def _head_line(reader: asyncio.StreamReader) -> str:
    line = await reader.readline()
    if not line.endswith(b"\n"):
        raise ConnectionResetError("connection closed before the answer's head was whole")
    return line.decode("latin-1").rstrip("\r\n")


async def _read_head(reader: asyncio.StreamReader) -> Tuple[int, str, Dict[str, str]]:
    while True:
        line = await _head_line(reader)
        _, code, *rest = line.split(" ", 2)
        headers: Dict[str, str] = {}
        while True:
            field = await _head_line(reader)
            if not field:
                break
            name, _, value = field.partition(":")
            headers[name.strip().lower()] = value.strip()
        if not code.startswith("1"):  # skip 100 Continue and friends
            return int(code), rest[0] if rest else "", headers
