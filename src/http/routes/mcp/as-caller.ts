import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import { PiGateway } from "../../../client/index.ts";

/** The gateway's own app, called in-process (Hono's `app.fetch`). */
export type AppFetch = (request: Request, env?: unknown) => Response | Promise<Response>;

/**
 * Who a tool acts as: the Authorization header of the MCP request that carries the call (so a key
 * revoked since the session opened stops working at once), the origin it came to, and the
 * client's connection (the audit log records its address).
 */
export interface Caller {
	authorization: string | undefined;
	origin: string;
	env: unknown;
}

/** The caller as the SDK hands it to each request's handlers (`extra.authInfo`). */
export function callerInfo(principal: { name: string; scopes: ReadonlySet<string> }, caller: Caller): AuthInfo {
	return {
		token: caller.authorization ?? "",
		clientId: principal.name,
		scopes: [...principal.scopes],
		extra: { caller },
	};
}

/**
 * The gateway's public API as the caller, in-process: every request passes the same
 * authentication, scopes, ownership, fair shares, limits and audit as one sent over the network,
 * and what it makes (sessions, runs, answers) is what the console and REST show.
 */
export function gatewayAs(app: AppFetch, authInfo: AuthInfo | undefined): PiGateway {
	const caller = (authInfo?.extra as { caller?: Caller } | undefined)?.caller;
	if (!caller) throw new Error("An MCP request without its caller");
	// Only the client's address goes along: an in-process stream must never close the client's socket.
	const incoming = (caller.env as { incoming?: unknown } | undefined)?.incoming;
	return new PiGateway({
		baseUrl: caller.origin,
		headers: caller.authorization ? { authorization: caller.authorization } : {},
		fetch: inProcess(app, { incoming }),
		reconnect: { delayMs: 100, maxAttempts: 3 },
	});
}

/** A fetch answered by `app` itself; its AbortSignal ends the answer's body as a network fetch's would. */
function inProcess(app: AppFetch, env: unknown): typeof fetch {
	return (async (input: string | URL | Request, init?: RequestInit) => {
		const request = new Request(input, init);
		request.signal.throwIfAborted();
		return abortable(await app(request, env), request.signal);
	}) as typeof fetch;
}

function abortable(res: Response, signal: AbortSignal): Response {
	const inner = res.body;
	if (!inner) return res;
	const reader = inner.getReader();
	let stop: (() => void) | undefined;
	const body = new ReadableStream<Uint8Array>(
		{
			start(controller) {
				stop = () => {
					controller.error(signal.reason);
					void reader.cancel(signal.reason).catch(() => {});
				};
				signal.addEventListener("abort", stop, { once: true });
			},
			async pull(controller) {
				const { done, value } = await reader.read();
				if (done) {
					if (stop) signal.removeEventListener("abort", stop);
					controller.close();
				} else controller.enqueue(value);
			},
			cancel(reason) {
				if (stop) signal.removeEventListener("abort", stop);
				return reader.cancel(reason);
			},
		},
		{ highWaterMark: 0 },
	);
	return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
}
