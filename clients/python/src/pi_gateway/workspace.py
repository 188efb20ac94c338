"""A session's folder over HTTP (``…/files``, ``…/changes``, ``…/archive``); paths relative to its cwd."""

from typing import Optional, cast

from . import schema as s
from .transport import AbortSignal, Response, Transport


class Workspace:
    def __init__(self, transport: Transport):
        self._http = transport

    def list(self, session_id: str, path: Optional[str] = None,
             signal: Optional[AbortSignal] = None) -> s.WorkspaceListing:
        return cast(s.WorkspaceListing, self._http.json(
            "GET", "/v1/sessions/{id}/files", params={"id": session_id}, query={"path": path}, signal=signal))

    def read(self, session_id: str, path: str, signal: Optional[AbortSignal] = None) -> bytes:
        return self._http.send("GET", "/v1/sessions/{id}/files/content", params={"id": session_id},
                               query={"path": path}, headers={"Accept": "*/*"}, signal=signal).read()

    def write(self, session_id: str, path: str, content: "bytes | str", if_match: Optional[str] = None,
              signal: Optional[AbortSignal] = None) -> bool:
        """Creates or replaces a file (folders too); True when it was new (201)."""
        data = content.encode("utf-8") if isinstance(content, str) else content
        res = self._http.send("PUT", "/v1/sessions/{id}/files/content", params={"id": session_id},
                              query={"path": path}, body=data,
                              headers={"If-Match": if_match} if if_match else {}, signal=signal)
        res.read()
        return res.status == 201

    def delete(self, session_id: str, path: str, signal: Optional[AbortSignal] = None) -> None:
        self._http.json("DELETE", "/v1/sessions/{id}/files/content", params={"id": session_id},
                        query={"path": path}, signal=signal)

    def search(self, session_id: str, q: str, glob: Optional[str] = None,
               signal: Optional[AbortSignal] = None) -> s.WorkspaceSearchResult:
        return cast(s.WorkspaceSearchResult, self._http.json(
            "GET", "/v1/sessions/{id}/files/search", params={"id": session_id}, query={"q": q, "glob": glob},
            signal=signal))

    def changes(self, session_id: str, run_id: Optional[str] = None,
                signal: Optional[AbortSignal] = None) -> s.WorkspaceChanges:
        return cast(s.WorkspaceChanges, self._http.json(
            "GET", "/v1/sessions/{id}/changes", params={"id": session_id}, query={"runId": run_id}, signal=signal))

    def archive(self, session_id: str, signal: Optional[AbortSignal] = None) -> Response:
        """The folder as a gzip'd tar: the open response (``chunks()`` to stream it, then ``close()``)."""
        return self._http.send("GET", "/v1/sessions/{id}/archive", params={"id": session_id},
                               headers={"Accept": "application/gzip"}, signal=signal)
