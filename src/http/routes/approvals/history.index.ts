import type { ApprovalHistory } from "../../../sessions/approval-history.ts";
import { createRouter } from "../../openapi.ts";
import { ApiError } from "../../problem.ts";
import { approvalHistory } from "./history.routes.ts";

export function approvalHistoryRouter(history: () => ApprovalHistory | undefined) {
	return createRouter().openapi(approvalHistory, (c) => {
		const h = history();
		if (!h)
			throw new ApiError(
				404,
				"history_unavailable",
				"Approval history is off: this app was built without the gateway's store",
			);
		const { status, sessionId, limit, cursor } = c.req.valid("query");
		return c.json(h.list({ status, sessionId, limit, before: cursor === undefined ? undefined : Number(cursor) }), 200);
	});
}
