import { createRoute, z } from "@hono/zod-openapi";
import { jsonBody, problem, problems } from "../../transport/openapi.ts";

const tags = ["mcp"];

/** One JSON-RPC 2.0 message as MCP's Streamable HTTP transport sends it; the SDK reads the rest. */
export const McpMessage = z
	.looseObject({
		jsonrpc: z.literal("2.0").describe("Always `2.0`"),
		id: z.union([z.string(), z.number()]).optional().describe("A request's id; absent on a notification"),
		method: z.string().optional().openapi({ description: "The request or notification", example: "tools/call" }),
		params: z.record(z.string(), z.unknown()).optional().describe("Its parameters"),
		result: z.unknown().optional().describe("A response's result (an answer to a request the server sent)"),
		error: z.unknown().optional().describe("A response's error"),
	})
	.openapi("McpMessage", {
		description:
			"A JSON-RPC 2.0 message of the Model Context Protocol (revision 2025-11-25): a request, a notification or a response",
		example: { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} },
	});

const SessionHeaders = z.object({
	"mcp-session-id": z.string().optional().openapi({
		description:
			"The MCP session, from the `Mcp-Session-Id` header of the initialize answer; required on every request after it. Another principal's (or an ended or expired) session id answers 404",
		example: "mcp_T3BhcXVlIHNlc3Npb24gaWQ",
	}),
	"mcp-protocol-version": z.string().optional().openapi({
		description: "The protocol revision the initialize answer agreed on; an unsupported one answers 400",
		example: "2025-11-25",
	}),
});

const sessionIdHeader = {
	"Mcp-Session-Id": {
		description: "The initialize answer's: the MCP session this client sends on every later request",
		schema: { type: "string" as const },
	},
};

const notFound = problem(
	"`mcp_session_not_found`: no MCP session with this id for this principal (it ended, expired after --mcp-idle-timeout-ms, or another principal opened it); open another with `initialize`",
);

export const mcpMessage = createRoute({
	operationId: "mcp.message",
	method: "post",
	path: "/mcp",
	tags,
	summary: "The MCP server (Streamable HTTP): one JSON-RPC message per request",
	description:
		"The Model Context Protocol's Streamable HTTP transport (revision 2025-11-25), for MCP clients such as Claude Code, Codex and Cursor; docs/mcp.md says what its tools and resources do. Any credential may call it (`Authorization: Bearer`): every tool calls this API as the caller, so each needs the scopes of the operations it runs. The first request is `initialize` without `Mcp-Session-Id`; its answer carries the `Mcp-Session-Id` header, which every later request sends. Send `Accept: application/json, text/event-stream`. A request answers `text/event-stream` (progress notifications while a tool runs, then its result) or `application/json`; a notification or response answers 202. There is no standalone stream (GET answers 405). An MCP session belongs to the principal that opened it, is held in fair shares (--mcp-max-sessions, --mcp-max-sessions-per-principal) and ends after --mcp-idle-timeout-ms without a request.",
	security: [{ bearer: [] }],
	request: { headers: SessionHeaders, body: jsonBody(McpMessage) },
	responses: {
		200: {
			description:
				"A request's answer: a stream of JSON-RPC messages (`event: message`), the last of which is the response, or that response as JSON",
			headers: sessionIdHeader,
			content: {
				"text/event-stream": {
					schema: z.string().openapi({ description: "`event: message` frames, each `data:` one JSON-RPC message" }),
				},
				"application/json": { schema: McpMessage },
			},
		},
		202: { description: "A notification or response, accepted (no body)" },
		...problems(401, 413, 415),
		400: problem(
			"Invalid input: not a JSON-RPC message, no `Mcp-Session-Id` on a request other than `initialize` (`mcp_session_required`), an unsupported `MCP-Protocol-Version`, or a second `initialize`",
		),
		404: notFound,
		406: problem("`Accept` does not list both application/json and text/event-stream (`not_acceptable`)"),
		429: problem(
			"Too many requests (--rate-limit-requests), or the principal's MCP sessions are all answering requests at its share (`mcp_sessions_limit`)",
		),
	},
});

export const mcpEnd = createRoute({
	operationId: "mcp.endSession",
	method: "delete",
	path: "/mcp",
	tags,
	summary: "End an MCP session",
	description:
		"Ends the MCP session named by `Mcp-Session-Id` (its requests still running are cancelled). The gateway sessions it started stay: end them with DELETE /v1/sessions/{id}.",
	security: [{ bearer: [] }],
	request: { headers: SessionHeaders },
	responses: {
		200: { description: "The MCP session ended (no body)" },
		...problems(401),
		400: problem("No `Mcp-Session-Id` (`mcp_session_required`), or an unsupported `MCP-Protocol-Version`"),
		404: notFound,
	},
});
