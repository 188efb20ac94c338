import type { AuditLog } from "../../observability/audit.ts";
import { createRouter } from "../../transport/openapi.ts";
import { auditLog } from "./audit.routes.ts";

export function auditRouter(log: AuditLog) {
	return createRouter().openapi(auditLog, async (c) => {
		const { principal, sessionId, limit, cursor } = c.req.valid("query");
		return c.json(
			await log.list({ principal, sessionId, limit, before: cursor === undefined ? undefined : Number(cursor) }),
			200,
		);
	});
}
