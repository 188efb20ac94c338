import type { ApprovalHistory } from "../../../sessions/dialogs/index.ts";
import type { SessionAccess } from "../../../sessions/registry/index.ts";
import { mayAccess } from "../../auth/ownership.ts";
import { createRouter } from "../../transport/openapi.ts";
import { ApiError } from "../../transport/problem.ts";
import { approvalHistory } from "./history.routes.ts";

export function approvalHistoryRouter(history: () => ApprovalHistory | undefined, access: SessionAccess) {
	return createRouter().openapi(approvalHistory, async (c) => {
		const h = history();
		if (!h)
			throw new ApiError(
				404,
				"history_unavailable",
				"Approval history is off: this app was built without the gateway's store",
			);
		const { status, sessionId, limit, cursor } = c.req.valid("query");
		const principal = c.get("principal");
		const page = await h.list({ status, sessionId, limit, before: cursor === undefined ? undefined : Number(cursor) });
		// A page may come out shorter than `limit` for a principal that sees few sessions: the cursor still moves on.
		const approvals = page.approvals.filter(
			(a) => !principal || mayAccess(access, principal, a.sessionId, "approvals:read"),
		);
		return c.json({ ...page, approvals }, 200);
	});
}
