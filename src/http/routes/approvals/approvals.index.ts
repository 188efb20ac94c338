import type { Deps } from "../../deps.ts";
import { createRouter } from "../../openapi.ts";
import { answerApproval, getApproval, getUi, inbox, sessionApprovals } from "./approvals.routes.ts";

export function approvalsRouter({ registry }: Deps) {
	return createRouter()
		.openapi(inbox, async (c) => {
			const { status, limit, cursor, wait } = c.req.valid("query");
			const start = Number(cursor ?? 0);
			const page = () => registry.approvals(status).slice(start, start + limit);
			if (wait && page().length === 0) await registry.waitForApproval(wait * 1000, c.req.raw.signal);
			const all = registry.approvals(status);
			const approvals = all.slice(start, start + limit);
			const nextCursor = start + limit < all.length ? String(start + limit) : null;
			return c.json({ approvals, nextCursor }, 200);
		})
		.openapi(sessionApprovals, (c) => {
			const session = registry.get(c.req.valid("param").id);
			return c.json({ approvals: session.approvals.list(c.req.valid("query").status), nextCursor: null }, 200);
		})
		.openapi(getApproval, (c) => {
			const { id, approvalId } = c.req.valid("param");
			return c.json(registry.get(id).approvals.get(approvalId), 200);
		})
		.openapi(answerApproval, (c) => {
			const { id, approvalId } = c.req.valid("param");
			return c.json(registry.get(id).approvals.answer(approvalId, c.req.valid("json")), 200);
		})
		.openapi(getUi, (c) => c.json(registry.get(c.req.valid("param").id).ui, 200));
}
