import { type McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js";
import { GatewayError, type PiGateway } from "../../../client/index.ts";
import { gatewayAs } from "./as-caller.ts";
import { sessionUri } from "./session-tools.ts";
import type { ToolContext } from "./tool-context.ts";

/**
 * MCP's "resource not found" (-32002, revision 2025-11-25). An error with a `code` goes out as it
 * is; the SDK's McpError would put "MCP error -32002:" in the message the client prefixes again.
 */
const notFound = (uri: string) =>
	Object.assign(new Error(`Resource not found: ${uri}`), { code: -32002, data: { uri } });

/** pi is running: reading its last text neither starts a stopped session nor waits behind a start. */
const live = new Set(["idle", "running", "waiting"]);

/**
 * Sessions as resources, `pi-gateway://sessions/{id}`: listed as the caller's session list shows
 * them, read as the session (GET /v1/sessions/{id}), its last assistant text and its pending
 * approvals. Another principal's session is not found, as an id that never existed.
 */
export function registerSessionResources(server: McpServer, ctx: ToolContext): void {
	const template = new ResourceTemplate("pi-gateway://sessions/{id}", {
		list: (extra) =>
			ctx.busy(async () => {
				const page = await gatewayAs(ctx.app, extra.authInfo).listSessions({ limit: 100 });
				return {
					resources: page.sessions.map((s) => ({
						uri: sessionUri(s.id),
						name: s.id,
						title: s.name ?? s.id,
						description: `${s.status}${s.model ? `, ${s.model.provider}/${s.model.id}` : ""}${s.pendingApprovals ? `, ${s.pendingApprovals} approvals pending` : ""}`,
						mimeType: "application/json",
					})),
				};
			}),
	});
	server.registerResource(
		"session",
		template,
		{
			title: "pi session",
			description: "A pi session: its status, model, folder, last assistant text and pending approvals",
			mimeType: "application/json",
		},
		(uri, variables, extra) =>
			ctx.busy(async () => {
				const id = String(variables.id);
				const gw = gatewayAs(ctx.app, extra.authInfo);
				const session = await gw.getSession(id).catch((error: unknown) => {
					if (error instanceof GatewayError && error.status === 404) throw notFound(uri.href);
					throw error;
				});
				// The REST representation, with what the last run said and what waits for an answer.
				const value = {
					...session,
					lastText: live.has(session.status) ? await lastText(gw, id) : null,
					approvals: session.pendingApprovals > 0 ? await pending(gw, id) : [],
				};
				return {
					contents: [{ uri: uri.href, mimeType: "application/json", text: JSON.stringify(value, null, 2) }],
				};
			}),
	);
}

async function lastText(gw: PiGateway, id: string): Promise<string | null> {
	try {
		return (await gw.lastAssistantText(id)).text ?? null;
	} catch {
		return null;
	}
}

/** Pending approvals, when the caller may read them (approvals:read). */
async function pending(gw: PiGateway, id: string): Promise<unknown[]> {
	try {
		return (await gw.request("GET", "/v1/sessions/{id}/approvals", { path: { id }, query: { status: "pending" } }))
			.approvals;
	} catch {
		return [];
	}
}
