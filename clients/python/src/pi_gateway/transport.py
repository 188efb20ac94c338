"""The one place requests are made: URL, auth, JSON bodies, problem+json on failure, and abort.

http.client rather than urllib.request: a stream must be readable chunk by chunk as it arrives
(``read1``) and cancellable from another thread, which needs the connection's socket.
"""

import http.client
import json
import socket
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple
from urllib.parse import quote, urlencode, urlsplit

from .errors import Aborted, GatewayError


class AbortSignal:
    """Like the web's AbortController + AbortSignal in one: ``abort()`` (from any thread) cuts
    every request made with this signal, and a call that sees it raises ``Aborted``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._aborted = False
        self._hooks: List[Callable[[], None]] = []

    @property
    def aborted(self) -> bool:
        return self._aborted

    def abort(self) -> None:
        with self._lock:
            if self._aborted:
                return
            self._aborted = True
            hooks, self._hooks = self._hooks, []
        for hook in hooks:
            hook()

    def on_abort(self, hook: Callable[[], None]) -> Callable[[], None]:
        """Runs ``hook`` on abort (at once if already aborted); returns a function that unregisters it."""
        with self._lock:
            if not self._aborted:
                self._hooks.append(hook)
                return lambda: self._remove(hook)
        hook()
        return lambda: None

    def _remove(self, hook: Callable[[], None]) -> None:
        with self._lock:
            if hook in self._hooks:
                self._hooks.remove(hook)

    def check(self) -> None:
        if self._aborted:
            raise Aborted("aborted")


class Response:
    """An open answer: status, headers, and the body to read (``read1`` chunks for streams)."""

    def __init__(self, conn: http.client.HTTPConnection, raw: http.client.HTTPResponse, release: Callable[[], None]):
        self._conn = conn
        self.raw = raw
        self.status = raw.status
        self.headers = raw.headers
        self._release = release

    def read(self) -> bytes:
        try:
            return self.raw.read()
        finally:
            self.close()

    def chunks(self, size: int = 65536):
        while True:
            chunk = self.raw.read1(size)
            if not chunk:
                return
            yield chunk

    def json(self) -> Any:
        text = self.read()
        return json.loads(text) if text else None

    def close(self) -> None:
        self._release()
        self._conn.close()


Query = Mapping[str, Any]


class Transport:
    def __init__(self, base_url: str, token: Optional[str] = None, headers: Optional[Mapping[str, str]] = None,
                 timeout: float = 300.0, stream_timeout: float = 90.0):
        parts = urlsplit(base_url.rstrip("/"))
        if parts.scheme not in ("http", "https"):
            raise ValueError(f"base_url must be http(s): {base_url}")
        self.base_url = base_url.rstrip("/")
        self._scheme = parts.scheme
        self._netloc = parts.netloc
        self._prefix = parts.path
        self._token = token
        self._headers = dict(headers or {})
        self.timeout = timeout
        # A stream silent this long (heartbeats stopped) counts as cut, and is resumed.
        self.stream_timeout = stream_timeout

    def path(self, template: str, params: Optional[Mapping[str, Any]] = None, query: Optional[Query] = None) -> str:
        out = template
        for name, value in (params or {}).items():
            out = out.replace("{" + name + "}", quote(str(value), safe=""))
        if "{" in out:
            raise ValueError(f"{template}: a path parameter is missing")
        pairs: List[Tuple[str, str]] = []
        for key, value in (query or {}).items():
            if value is None:
                continue
            pairs.append((key, ("true" if value else "false") if isinstance(value, bool) else str(value)))
        return self._prefix + out + ("?" + urlencode(pairs) if pairs else "")

    def send(self, method: str, template: str, params: Optional[Mapping[str, Any]] = None,
             query: Optional[Query] = None, body: Any = None, headers: Optional[Mapping[str, str]] = None,
             signal: Optional[AbortSignal] = None, timeout: Optional[float] = None) -> Response:
        """Sends one request; a non-2xx answer is raised as GatewayError, anything else returned open."""
        if signal:
            signal.check()
        all_headers: Dict[str, str] = {"Accept": "application/json", **self._headers}
        if self._token:
            all_headers["Authorization"] = f"Bearer {self._token}"
        data: Optional[bytes] = None
        if isinstance(body, (bytes, bytearray)):
            data = bytes(body)
            all_headers["Content-Type"] = "application/octet-stream"
        elif body is not None:
            data = json.dumps(body).encode("utf-8")
            all_headers["Content-Type"] = "application/json"
        all_headers.update(headers or {})
        cls = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
        conn = cls(self._netloc, timeout=timeout or self.timeout)

        def cut() -> None:
            # shutdown() wakes a thread blocked in recv(); close() alone would not.
            sock = conn.sock
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        release = signal.on_abort(cut) if signal else (lambda: None)
        try:
            conn.request(method, self.path(template, params, query), body=data, headers=all_headers)
            raw = conn.getresponse()
        except (OSError, http.client.HTTPException):
            release()
            conn.close()
            if signal and signal.aborted:
                raise Aborted("aborted") from None
            raise
        except BaseException:
            # KeyboardInterrupt: the connection closes now, so the gateway sees its caller go
            # (a prompt_and_wait's run is cancelled then: Prefer cancel-on-disconnect).
            release()
            conn.close()
            raise
        res = Response(conn, raw, release)
        if raw.status >= 400:
            error = GatewayError.from_body(raw.status, raw.reason, res.read(), raw.headers.get("Retry-After"))
            raise error
        return res

    def json(self, method: str, template: str, **kwargs: Any) -> Any:
        res = self.send(method, template, **kwargs)
        try:
            return res.json()
        except (OSError, http.client.HTTPException):
            signal = kwargs.get("signal")
            if signal and signal.aborted:
                raise Aborted("aborted") from None
            raise
