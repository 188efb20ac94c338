"""Waiting for a dialog and answering it, over the inbox's long-poll.

``GET /v1/approvals?status=pending&wait=N`` answers at once when something is pending; when what
is pending belongs to other sessions, the next poll passes ``cursor`` so that it waits for newer
dialogs instead of spinning on the same page.
"""

import time
from typing import Callable, Optional, cast

from .schema import Approval, ApprovalAnswer, ApprovalList
from .transport import AbortSignal, Transport


class Approvals:
    def __init__(self, transport: Transport):
        self._transport = transport

    def next(self, session_id: Optional[str] = None, filter: Optional[Callable[[Approval], bool]] = None,
             poll_seconds: int = 30, timeout: Optional[float] = None,
             signal: Optional[AbortSignal] = None) -> Optional[Approval]:
        """The oldest pending dialog that matches, as soon as there is one (None after ``timeout`` seconds)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        cursor: Optional[str] = None
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return None
            wait = max(1, min(poll_seconds, int(left + 0.999) if left is not None else poll_seconds))
            page = cast(ApprovalList, self._transport.json(
                "GET", "/v1/approvals", query={"status": "pending", "wait": wait, "cursor": cursor},
                signal=signal, timeout=wait + 30,
            ))
            for approval in page["approvals"]:
                if approval["status"] != "pending":
                    continue
                if session_id is not None and approval["sessionId"] != session_id:
                    continue
                if filter is None or filter(approval):
                    return approval
            if page["approvals"] or page["hasMore"]:
                cursor = page["nextCursor"]

    def answer(self, approval: Approval, answer: ApprovalAnswer, signal: Optional[AbortSignal] = None) -> Approval:
        """Answers a dialog; the resolved approval comes back (409 already answered, 410 expired, 422 misfit)."""
        return cast(Approval, self._transport.json(
            "POST", "/v1/sessions/{id}/approvals/{approvalId}",
            params={"id": approval["sessionId"], "approvalId": approval["id"]}, body=answer, signal=signal,
        ))

    def answer_next(self, decide: Callable[[Approval], ApprovalAnswer], **options) -> Optional[Approval]:
        """Waits for the next matching dialog (options as for ``next``) and answers it with ``decide``'s answer."""
        approval = self.next(**options)
        if approval is None:
            return None
        return self.answer(approval, decide(approval), options.get("signal"))
