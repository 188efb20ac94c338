import { createRoute, z } from "@hono/zod-openapi";
import { ToolCall, ToolCallAnswer, ToolCallStatus } from "../../../sessions/dialogs/index.ts";
import { json, jsonBody, problem, problems } from "../../transport/openapi.ts";
import { longPollWait, SessionParams } from "../../transport/params.ts";

const ToolCallParams = SessionParams.extend({
	callId: z
		.string()
		.min(1)
		.max(512)
		.openapi({
			param: { name: "callId", in: "path" },
			description: "The tool call's id (the model's toolCallId, as `tool_call_requested` carried it)",
			example: "call_7f3a",
		}),
});

const exampleCall = {
	id: "call_7f3a",
	sessionId: "ses_Crw9Yvn1qjeD",
	runId: "gw_4",
	name: "lookup_price",
	arguments: { sku: "A-1" },
	status: "pending",
	createdAt: "2026-01-05T10:00:00.000Z",
	answeredAt: null,
	result: null,
	resolvedBy: null,
};

export const ToolCallList = z
	.object({
		toolCalls: z.array(ToolCall).openapi({ description: "Oldest first" }),
	})
	.openapi("ToolCallList", {
		description: "Client tool calls",
		example: { toolCalls: [exampleCall] },
	});

const ListQuery = z.object({
	status: ToolCallStatus.optional().openapi({ description: "Only calls in this status", example: "pending" }),
	wait: longPollWait("Seconds to hold an empty list: it is answered as soon as a matching call appears (long-poll)"),
});

export const allToolCalls = createRoute({
	operationId: "toolcalls.inbox",
	method: "get",
	path: "/v1/tool-calls",
	tags: ["tool-calls"],
	summary: "Client tool calls across the caller's sessions, oldest first",
	description:
		"`?status=pending&wait=N`: the calls waiting for the program, long-polled (an empty list is held up to N seconds). A program serving several sessions answers them all from this one loop.",
	request: { query: ListQuery },
	responses: { 200: json(ToolCallList, "The caller's sessions' tool calls"), ...problems(400, 401) },
});

export const sessionToolCalls = createRoute({
	operationId: "toolcalls.list",
	method: "get",
	path: "/v1/sessions/{id}/tool-calls",
	tags: ["tool-calls"],
	summary: "The session's client tool calls, oldest first",
	description: "`?status=pending&wait=N` long-polls for the next call the program must answer.",
	request: { params: SessionParams, query: ListQuery },
	responses: { 200: json(ToolCallList, "The session's tool calls"), ...problems(400, 401, 404) },
});

export const getToolCall = createRoute({
	operationId: "toolcalls.get",
	method: "get",
	path: "/v1/sessions/{id}/tool-calls/{callId}",
	tags: ["tool-calls"],
	summary: "One client tool call",
	request: { params: ToolCallParams },
	responses: {
		200: {
			description: "The tool call",
			content: { "application/json": { schema: ToolCall, example: exampleCall } },
		},
		...problems(400, 401, 404),
	},
});

export const answerToolCall = createRoute({
	operationId: "toolcalls.answer",
	method: "post",
	path: "/v1/sessions/{id}/tool-calls/{callId}",
	tags: ["tool-calls"],
	summary: "Answer a client tool call: the output is the tool's result; it goes to pi at once, never behind the queue",
	request: {
		params: ToolCallParams,
		body: jsonBody(ToolCallAnswer, { output: "19.90", isError: false }),
	},
	responses: {
		200: {
			description: "The answered tool call",
			content: {
				"application/json": {
					schema: ToolCall,
					example: {
						...exampleCall,
						status: "answered",
						answeredAt: "2026-01-05T10:00:02.000Z",
						result: { output: "19.90", isError: false },
						resolvedBy: "admin",
					},
				},
			},
		},
		...problems(400, 401, 404, 413, 415),
		409: problem("Another answer won: the call was already answered"),
		410: problem("Nobody can answer it any more: its run was aborted or ended, pi exited, or the timeout ran out"),
		422: problem("The answer's shape is wrong: `{output: string | content blocks, isError?: boolean}`"),
	},
});
