import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { PiGateway, Schemas } from "../../../client/index.ts";
import { gatewayAs } from "./as-caller.ts";
import { answer, type Extra, failure, type ToolContext } from "./tool-context.ts";

/** A session's MCP resource. */
export const sessionUri = (id: string) => `pi-gateway://sessions/${encodeURIComponent(id)}`;

const sessionId = z.string().min(1).max(200).describe("The session's id (ses_…)");

/** The tools that map one REST call each: start and list sessions, list and answer approvals, read changes. */
export function registerSessionTools(server: McpServer, ctx: ToolContext): void {
	/** A tool body run as the caller, busy while it runs; a refusal becomes a tool error. */
	const call =
		<A>(work: (gw: PiGateway, args: A) => Promise<CallToolResult>) =>
		(args: A, extra: Extra) =>
			ctx.busy(() => work(gatewayAs(ctx.app, extra.authInfo), args).catch(failure));

	server.registerTool(
		"start_session",
		{
			title: "Start a pi session",
			description:
				"Starts a pi coding agent session in a folder of its own (POST /v1/sessions) and answers its id, for prompt. Every field is optional; the gateway's defaults apply.",
			inputSchema: {
				name: z.string().max(200).optional().describe("A display name"),
				model: z.string().max(200).optional().describe("A model the gateway offers (`provider/id` or `id`)"),
				thinkingLevel: z.string().max(50).optional().describe("off, minimal, low, medium, high or xhigh"),
				extensions: z
					.array(z.string().max(200))
					.max(32)
					.optional()
					.describe("Extensions from the gateway's allow-list (GET /v1/info), e.g. permission-gate"),
				cwd: z.string().max(4096).optional().describe("A folder inside the caller's area (default: a new one)"),
				appendSystemPrompt: z.string().max(65536).optional().describe("Text added to pi's system prompt"),
			},
			annotations: { destructiveHint: false, openWorldHint: true },
		},
		call(async (gw, args: Record<string, unknown>) => {
			const body = Object.fromEntries(Object.entries(args).filter(([, v]) => v !== undefined));
			const session = await gw.createSession(body as Schemas["CreateSession"]);
			const value = { ...summary(session), uri: sessionUri(session.id) };
			const result = answer(value);
			result.content.push({
				type: "resource_link",
				uri: value.uri,
				name: session.name ?? session.id,
				mimeType: "application/json",
			});
			return result;
		}),
	);
	server.registerTool(
		"list_sessions",
		{
			title: "List sessions",
			description: "The caller's sessions (the newest 100), with status and pending approvals",
			inputSchema: {},
			annotations: { readOnlyHint: true },
		},
		call(async (gw) => {
			const page = await gw.listSessions({ limit: 100 });
			return answer({ sessions: page.sessions.map(summary), hasMore: page.hasMore });
		}),
	);
	server.registerTool(
		"list_approvals",
		{
			title: "List pending approvals",
			description:
				"Dialogs waiting for an answer (a permission gate's question, say): of one session, or of every session the caller may read",
			inputSchema: { sessionId: sessionId.optional() },
			annotations: { readOnlyHint: true },
		},
		call(async (gw, args: { sessionId?: string }) => {
			const page = args.sessionId
				? await gw.request("GET", "/v1/sessions/{id}/approvals", {
						path: { id: args.sessionId },
						query: { status: "pending" },
					})
				: await gw.request("GET", "/v1/approvals", { query: { status: "pending" } });
			return answer({ approvals: page.approvals, hasMore: page.hasMore });
		}),
	);
	server.registerTool(
		"answer_approval",
		{
			title: "Answer an approval",
			description:
				"Answers a pending dialog with exactly one of: confirmed (a confirm), value (a select: one of its options; an input or editor: text), cancelled: true. The run it held goes on (wait_for_run follows it).",
			inputSchema: {
				sessionId,
				approvalId: z.string().min(1).max(200).describe("The approval's id"),
				confirmed: z.boolean().optional().describe("A confirm dialog's answer"),
				value: z.string().max(1_000_000).optional().describe("A select's option, or an input's or editor's text"),
				cancelled: z.literal(true).optional().describe("Dismiss the dialog"),
			},
			annotations: { destructiveHint: true },
		},
		call(async (gw, { sessionId: id, approvalId, ...given }: Record<string, unknown>) => {
			const body = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined));
			const resolved = await gw.approvals.answer(
				{ id: approvalId as string, sessionId: id as string },
				body as Schemas["ApprovalAnswer"],
			);
			return answer(resolved as Record<string, unknown>);
		}),
	);
	server.registerTool(
		"get_changes",
		{
			title: "What changed",
			description:
				"The files a session's agent changed, with diffs: in one run (runId, from prompt) or since the session started",
			inputSchema: { sessionId, runId: z.string().max(100).optional().describe("One run's changes only") },
			annotations: { readOnlyHint: true },
		},
		call(async (gw, args: { sessionId: string; runId?: string }) => {
			const changes = await gw.workspace.changes(args.sessionId, args.runId);
			return answer(changes as Record<string, unknown>);
		}),
	);
}

/** What a listing shows of a session. */
export function summary(s: Schemas["Session"]) {
	return {
		sessionId: s.id,
		name: s.name,
		status: s.status,
		model: s.model ? `${s.model.provider}/${s.model.id}` : null,
		cwd: s.cwd,
		currentRunId: s.currentRunId,
		pendingApprovals: s.pendingApprovals,
		createdAt: s.createdAt,
		lastActivityAt: s.lastActivityAt,
	};
}
