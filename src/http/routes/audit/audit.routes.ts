import { createRoute, z } from "@hono/zod-openapi";
import { AuditEntry, auditExample } from "../../observability/audit.ts";
import { json, problems } from "../../transport/openapi.ts";
import { pageQuery } from "../../transport/params.ts";

export const auditLog = createRoute({
	operationId: "audit.list",
	method: "get",
	path: "/v1/audit",
	tags: ["system"],
	summary: "The audit log, newest first: who created, prompted, answered, deleted what, when, from where (admin)",
	description:
		"Every authenticated request that changes something (POST, PUT, PATCH, DELETE), denied ones included, with the principal, the operation, the session, the status and the client's address. Kept in the gateway's store across restarts, the newest --max-audit-entries; each is also a JSON line in the log (`msg: \"audit\"`).",
	request: {
		query: pageQuery("older entries").extend({
			principal: z
				.string()
				.max(128)
				.optional()
				.openapi({ description: "Only requests this principal made", example: "carol" }),
			sessionId: z
				.string()
				.max(100)
				.optional()
				.openapi({ description: "Only requests about this session", example: "ses_Qm9wYXJ0aWFs" }),
		}),
	},
	responses: {
		200: json(
			z
				.object({
					entries: z.array(AuditEntry).describe("Entries of this page, newest first"),
					nextCursor: z.string().nullable().describe("Pass as `cursor` for older entries; null at the end"),
				})
				.openapi("AuditPage", {
					description: "A page of the audit log",
					example: { entries: [auditExample], nextCursor: null },
				}),
			"A page of entries",
		),
		...problems(400, 401, 403),
	},
});
