import { createRoute, z } from "@hono/zod-openapi";
import { Approval, ApprovalAnswer, ApprovalStatus, approvalExample } from "../../../sessions/dialogs/index.ts";
import { json, jsonBody, problem, problems } from "../../transport/openapi.ts";
import { longPollWait, pageQuery, SessionParams } from "../../transport/params.ts";

const ApprovalParams = SessionParams.extend({
	approvalId: z.string().openapi({
		param: { name: "approvalId", in: "path" },
		description: "The approval's id (pi's dialog id), as its `approval_requested` event or a list gave it",
		example: "3f1c2a9e-5d7b-4c1e-9a0f-6b8d2e4f1a3c",
	}),
});

const ApprovalList = z
	.object({
		approvals: z.array(Approval).describe("Approvals of this page, oldest first"),
		nextCursor: z.string().openapi({
			description:
				"Position after the last approval of this page: pass it as `cursor` for the next page, or with `wait` to long-poll for newer approvals",
		}),
		hasMore: z.boolean().openapi({ description: "More approvals already lie beyond `nextCursor`" }),
	})
	.openapi("ApprovalList", {
		description: "A page of approvals",
		example: { approvals: [approvalExample], nextCursor: "17", hasMore: false },
	});

const PageQuery = pageQuery("only approvals created after it").extend({
	// Described as a parameter: beside a schema's `$ref`, a description would become an `allOf`.
	status: ApprovalStatus.optional().openapi({
		param: { description: "Only approvals in this state", example: "pending" },
	}),
});

export const inbox = createRoute({
	operationId: "approvals.inbox",
	method: "get",
	path: "/v1/approvals",
	tags: ["approvals"],
	summary: "Approvals across all sessions, oldest first (the inbox)",
	description:
		"`?status=pending` is the list of dialogs waiting for someone. With `wait=N` an empty page is held up to N seconds and answered as soon as a matching approval appears (long-poll for clients without SSE).",
	request: {
		query: PageQuery.extend({
			wait: longPollWait("Seconds to wait while the page would be empty"),
		}),
	},
	responses: { 200: json(ApprovalList, "A page of approvals"), ...problems(400, 401) },
});

export const sessionApprovals = createRoute({
	operationId: "approvals.list",
	method: "get",
	path: "/v1/sessions/{id}/approvals",
	tags: ["approvals"],
	summary: "The session's approvals, oldest first",
	request: { params: SessionParams, query: PageQuery },
	responses: { 200: json(ApprovalList, "A page of the session's approvals"), ...problems(400, 401, 404) },
});

export const getApproval = createRoute({
	operationId: "approvals.get",
	method: "get",
	path: "/v1/sessions/{id}/approvals/{approvalId}",
	tags: ["approvals"],
	summary: "One approval",
	request: { params: ApprovalParams },
	responses: { 200: json(Approval, "The approval"), ...problems(401, 404, 410) },
});

export const answerApproval = createRoute({
	operationId: "approvals.answer",
	method: "post",
	path: "/v1/sessions/{id}/approvals/{approvalId}",
	tags: ["approvals"],
	summary: "Answer a dialog; the answer goes to pi at once, never behind the command queue",
	request: {
		params: ApprovalParams,
		body: jsonBody(ApprovalAnswer),
	},
	responses: {
		200: json(Approval, "The resolved approval"),
		...problems(400, 401, 404, 413, 415),
		409: problem("Another answer won: the approval was already answered"),
		410: problem("Nobody can answer it any more: pi's timeout ran out, the run was aborted or pi exited"),
		422: problem("The answer does not fit the dialog: `confirmed` for confirm, one of the options for select"),
	},
});
