import { createRoute, z } from "@hono/zod-openapi";
import { Approval, approvalExample } from "../../../sessions/dialogs/index.ts";
import { json, problems } from "../../transport/openapi.ts";
import { pageQuery } from "../../transport/params.ts";

export const approvalHistory = createRoute({
	operationId: "approvals.history",
	method: "get",
	path: "/v1/approvals/history",
	tags: ["approvals"],
	summary: "Resolved approvals across all sessions, newest first: who answered, when, and what",
	description:
		"Kept in the gateway's store for --approval-history-ms (7 days by default, at most --max-approval-history rows), so it outlives the sessions' own lists and a gateway restart. Automatic answers show `resolvedBy: policy:<rule>`.",
	request: {
		query: pageQuery("older approvals").extend({
			status: z
				.enum(["answered", "expired", "cancelled"])
				.optional()
				.openapi({ description: "Only approvals settled this way", example: "answered" }),
			sessionId: z
				.string()
				.max(100)
				.optional()
				.openapi({ description: "Only this session's approvals", example: "ses_Qm9wYXJ0aWFs" }),
		}),
	},
	responses: {
		200: json(
			z
				.object({
					approvals: z.array(Approval).describe("Resolved approvals, newest first"),
					nextCursor: z
						.string()
						.nullable()
						.openapi({ description: "Pass as `cursor` for older ones; null at the end" }),
				})
				.openapi("ApprovalHistory", {
					description: "A page of resolved approvals",
					example: {
						approvals: [
							{
								...approvalExample,
								status: "answered",
								answer: { value: "Allow" },
								resolvedAt: "2026-12-01T10:00:03.000Z",
								resolvedBy: "alice",
							},
						],
						nextCursor: null,
					},
				}),
			"A page of resolved approvals",
		),
		...problems(400, 401),
		404: {
			description: "History is off: an app built without the gateway's store",
			content: { "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } } },
		},
	},
});
