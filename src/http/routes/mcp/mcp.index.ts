import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import type { Context } from "hono";
import { shareOf } from "../../../config/config.ts";
import { type AppEnv, createRouter } from "../../transport/openapi.ts";
import { ApiError } from "../../transport/problem.ts";
import type { Deps } from "../deps.ts";
import { type AppFetch, callerInfo } from "./as-caller.ts";
import { mcpEnd, mcpMessage } from "./mcp.routes.ts";
import { mcpServer } from "./mcp-server.ts";
import { McpSessions } from "./mcp-sessions.ts";

type Transport = WebStandardStreamableHTTPServerTransport;
interface McpSession {
	transport: Transport;
	connect(): Promise<void>;
	close(): Promise<void>;
}

/**
 * /mcp: the MCP server (Streamable HTTP, the official SDK's transport), after the gateway's own
 * authentication like every route. Each MCP session is the SDK's server and transport, bound to
 * the principal that opened it; its tools call this gateway's public API in-process as the caller
 * (`app`), so nothing here decides who may do what.
 */
export function mcpRouter({ config }: Deps, options: { app: AppFetch; version: string }) {
	const sessions = new McpSessions<McpSession>({
		max: config.mcpMaxSessions,
		share: shareOf(config.mcpMaxSessions, config.mcpMaxSessionsPerPrincipal),
		idleMs: config.mcpIdleTimeoutMs,
	});
	const make = (id: string): McpSession => {
		// No standalone GET stream, no resumability: the SDK's defaults otherwise (SSE answers, so progress flows).
		const transport = new WebStandardStreamableHTTPServerTransport({
			sessionIdGenerator: () => id,
			onsessionclosed: () => sessions.remove(id),
		});
		const busy = <R>(work: () => Promise<R>) => sessions.using(id, work);
		const server = mcpServer(
			{ app: options.app, runs: new Map(), maxWaitMs: config.waitTimeoutMs, busy },
			options.version,
		);
		server.server.onclose = () => sessions.remove(id);
		return { transport, close: () => server.close(), connect: () => server.connect(transport) };
	};

	const router = createRouter();
	// Before the body is read or validated, as sessionOwnership does for /v1/sessions/{id}: another
	// principal's MCP session is not found, whatever the request.
	router.use("/mcp", async (c, next) => {
		const id = c.req.header("mcp-session-id");
		if (id !== undefined) own(c, id);
		return next();
	});
	return router
		.openapi(mcpMessage, async (c) => {
			const body = c.req.valid("json");
			const authInfo = callerOf(c);
			const id = c.req.header("mcp-session-id");
			if (id !== undefined)
				return answerOf(await own(c, id).transport.handleRequest(c.req.raw, { parsedBody: body, authInfo }));
			if (!isInitializeRequest(body))
				throw new ApiError(
					400,
					"mcp_session_required",
					"Send the Mcp-Session-Id header the initialize answer gave, or an initialize request to open an MCP session",
				);
			const opened = sessions.open(authInfo.clientId, make);
			await opened.session.connect();
			const res = await opened.session.transport.handleRequest(c.req.raw, { parsedBody: body, authInfo });
			// Refused (a wrong Accept, say): nothing was opened.
			if (opened.session.transport.sessionId === undefined) {
				sessions.remove(opened.id);
				await opened.session.close();
			}
			return answerOf(res);
		})
		.openapi(mcpEnd, async (c) => {
			const id = c.req.header("mcp-session-id");
			if (id === undefined) throw new ApiError(400, "mcp_session_required", "Send the Mcp-Session-Id header to end");
			const session = own(c, id);
			const res = await session.transport.handleRequest(c.req.raw, { authInfo: callerOf(c) });
			if (res.ok) {
				sessions.remove(id);
				await session.close();
			}
			return answerOf(res);
		});

	/** The caller's MCP session `id`; another principal's is not found, as one that never existed. */
	function own(c: Context<AppEnv>, id: string): McpSession {
		const session = sessions.get(id, callerOf(c).clientId);
		if (session) return session;
		throw new ApiError(
			404,
			"mcp_session_not_found",
			`No MCP session ${id}: it ended or expired (or was never opened with this credential); open another with initialize`,
		);
	}
}

function callerOf(c: Context<AppEnv>): AuthInfo {
	const principal = c.get("principal");
	if (!principal) throw new ApiError(401, "unauthorized", "A valid bearer token is required (Authorization: Bearer …)");
	return callerInfo(principal, {
		authorization: c.req.header("authorization"),
		origin: new URL(c.req.url).origin,
		env: c.env,
	});
}

/** The transport's refusals as problem+json like every other answer of the gateway (its message as `detail`). */
const codes: Record<number, string> = {
	400: "invalid_mcp_request",
	404: "mcp_session_not_found",
	405: "method_not_allowed",
	406: "not_acceptable",
	409: "conflict",
	413: "body_too_large",
	415: "unsupported_media_type",
};

async function answerOf(res: Response): Promise<never> {
	if (res.status < 400) {
		if (res.headers.get("content-type")?.startsWith("text/event-stream")) res.headers.set("X-Accel-Buffering", "no");
		return res as never;
	}
	const text = await res.text().catch(() => "");
	let detail = text || `HTTP ${res.status}`;
	try {
		detail = (JSON.parse(text) as { error: { message: string } }).error.message;
	} catch {}
	throw new ApiError(res.status, codes[res.status] ?? "mcp_error", detail);
}
