import type { Context, MiddlewareHandler } from "hono";
import type { Cluster } from "../../cluster/cluster.ts";
import { forward } from "../../cluster/forward.ts";
import type { SessionAccessRecord, SessionRegistry } from "../../sessions/registry/index.ts";
import { mayAccessRecord, notFound, sessionPath } from "../auth/ownership.ts";
import { hasScope, type Scope } from "../auth/principals.ts";
import type { StreamTickets } from "../auth/tickets.ts";
import type { AppEnv } from "../transport/openapi.ts";
import { ApiError } from "../transport/problem.ts";

/** The client's address, on a forwarded request. */
const clientHeader = "x-pi-gateway-client";

/** Forwarding rounds per request: the owner may move once or twice (a failover, a release) while it waits. */
const maxRounds = 3;

/**
 * Cluster mode: a request for `/v1/sessions/{id}/…` goes where the session lives. Held here, or
 * owned by no live node (then claimed here): it goes on through this node's middleware. Owned
 * by another live node: forwarded there as it is (credentials included: the owner authenticates
 * it again, checks the session's owner and shares, which it holds, and audits it, as it would a
 * request sent to it directly), and its answer streams back. When the owner cannot be reached, nothing reached pi, so the request waits for the
 * session to move (the owner's lease runs out, or it gave the session up while stopping) and is
 * served where it went; only past that a 503 with Retry-After says to try again.
 * Runs after authentication and the scope check (app.ts): a claim copies a conversation to this
 * node's disk and a forward costs the owner, so a caller without a credential for the operation
 * gets its 401 or 403 here and changes nothing anywhere. Nor does a caller without a right on the
 * session (its owner, or a share that covers the operation's scope): a session no live node owns
 * is not claimed for it, and it gets the 404 of a session that does not exist.
 */
export function clusterRouting(
	current: () => Cluster | undefined,
	registry: SessionRegistry,
	maxBodyBytes: number,
	/** Requests whose body is streamed to the owner, not read first (workspace uploads, bounded there). */
	streamsBody: (method: string, path: string) => boolean = () => false,
	/** The scope of an operation (ScopedRoutes.find): the right a claim for its caller needs. */
	scopeOf: (method: string, path: string) => Scope | undefined = () => undefined,
): MiddlewareHandler<AppEnv> {
	return async function clusterRoutingMiddleware(c, next) {
		const cluster = current();
		// Listening comes a moment before joining (the URL others reach it at needs the port).
		if (!cluster && c.req.path.startsWith("/v1/"))
			throw new ApiError(503, "database_unavailable", "This node is joining its cluster", { retryAfter: 1 } as object);
		const match = sessionPath.exec(c.req.path);
		if (!cluster || !match?.[1]) return next();
		const id = decoded(match[1]);
		// An id that does not decode names no session: nothing to locate (the routes answer it).
		if (id === undefined) return next();
		const forwarded = cluster.isForwarded(c.req.raw.headers);
		// Only a verified forward may say who the client is (the audit log records it).
		const client = forwarded ? c.req.header(clientHeader) : undefined;
		if (client) c.set("clientAddress", client);
		// A stopping node takes nothing new for its sessions: a forwarded request goes back (its sender
		// waits for the session to move), a direct one is told to retry (the load balancer picks another node).
		if (registry.closing) {
			if (forwarded) throw new ApiError(421, "not_owner", "This node is shutting down");
			throw new ApiError(503, "shutting_down", "This node is shutting down; retry (another node serves the session)", {
				retryAfter: 1,
			} as object);
		}
		let body: Uint8Array | undefined;
		const streamed = streamsBody(c.req.method, c.req.path);
		// An admin may have any session claimed; anyone else one it may use (reading at least).
		const principal = c.get("principal");
		const scope = scopeOf(c.req.method, c.req.path) ?? "sessions:read";
		const allowed =
			principal && !hasScope(principal, "admin")
				? (record: SessionAccessRecord) => mayAccessRecord(record, principal, scope)
				: undefined;
		for (let round = 1; ; round++) {
			const route = await cluster.locate(id, allowed);
			if (route.kind === "hidden") {
				cluster.unhold(id);
				throw notFound(id);
			}
			if (route.kind === "local") {
				// The body was read to forward it: the local handlers read it again from here.
				if (body) c.req.raw = rebuilt(c.req.raw, body);
				try {
					return await next();
				} finally {
					cluster.unhold(id);
				}
			}
			cluster.unhold(id);
			// A forwarded request is never forwarded again: the sender looks the owner up anew.
			if (forwarded) throw new ApiError(421, "not_owner", `Session ${id} is served by node ${route.node} now`);
			if (!streamed) body ??= await readBody(c.req.raw, maxBodyBytes);
			const sending = streamed ? (c.req.raw.body ?? undefined) : body;
			const answer = await forward(route.url, c.req.raw, sending, sentOn(c, cluster), watch(cluster, route.node));
			if (answer instanceof Response && answer.status !== 421) {
				c.set("forwardedTo", route.node);
				return answer;
			}
			if (answer instanceof Response) await answer.body?.cancel();
			// Sent elsewhere only when the owner never saw it (refused, or sent back with 421), or it reads only.
			// A streamed body is gone once sent: that request is never sent twice (the client retries it).
			const safe =
				!streamed &&
				(answer instanceof Response || answer.refused || c.req.method === "GET" || c.req.method === "HEAD");
			const moved = safe && round < maxRounds && (await cluster.waitForMove(id, route.node, c.req.raw.signal));
			if (!moved) {
				const why = answer instanceof Response ? "it gave the session up" : answer.unreachable;
				throw new ApiError(
					503,
					"owner_unreachable",
					`Node ${route.node}, which runs session ${id}, cannot be reached (${why}); the session moves to another node when its lease runs out`,
					{ retryAfter: 2 } as object,
				);
			}
		}
	};
}

const sessionStream = /^\/v1\/sessions\/([^/]+)\/events$/;

/**
 * Cluster mode, before authentication: EventSource retries the very URL of its stream, ticket
 * included, also past the ticket's expiry, and a load balancer may send the retry to a node that
 * did not serve the stream. Only the node that served it knows whether the ticket is bound
 * (tickets.ts), so such a retry for a session another live node runs goes there and is judged
 * there. The owner is only looked up, never claimed: an expired ticket changes nothing, and
 * anything else goes on to authentication (401).
 */
export function ticketReconnects(
	current: () => Cluster | undefined,
	tickets: StreamTickets,
): MiddlewareHandler<AppEnv> {
	return async function ticketReconnectsMiddleware(c, next) {
		const cluster = current();
		const scope = c.req.method === "GET" ? sessionStream.exec(c.req.path)?.[1] : undefined;
		const ticket = c.req.query("ticket");
		if (!cluster || scope === undefined || ticket === undefined || c.req.header("authorization")) return next();
		if (cluster.isForwarded(c.req.raw.headers) || !tickets.mayBeBoundElsewhere(ticket, scope)) return next();
		const id = decoded(scope);
		const owner = id === undefined ? undefined : await cluster.ownerElsewhere(id);
		if (!owner) return next();
		const answer = await forward(owner.url, c.req.raw, undefined, sentOn(c, cluster), watch(cluster, owner.node));
		if (answer instanceof Response && answer.status !== 421) return answer;
		if (answer instanceof Response) await answer.body?.cancel();
		return next();
	};
}

/** What a forwarded request carries besides its own headers: the MAC, and the client's address. */
function sentOn(c: Context<AppEnv>, cluster: Cluster): Record<string, string> {
	const incoming = (c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming;
	const from = incoming?.socket?.remoteAddress;
	return { ...cluster.forwardHeaders, ...(from && { [clientHeader]: from }) };
}

/**
 * Cluster mode: what a client is told is done is in PostgreSQL before it is told, whatever the
 * operation (a settled wait-mode run's conversation, a new session's owner, a share, a remembered
 * rule, a delete). The store writes behind, and a node killed right after answering would
 * otherwise lose what it acknowledged. Only what was queued so far is waited for (usually nothing).
 */
export function durableAnswers(registry: SessionRegistry): MiddlewareHandler<AppEnv> {
	return async function durableAnswersMiddleware(c, next) {
		await next();
		if (c.req.method !== "GET" && c.req.method !== "HEAD" && c.res.status < 400) await registry.persisted();
	};
}

/**
 * Cuts a forwarded exchange when the owner's lease runs out (a paused or cut-off node accepts TCP
 * and never answers): the client gets a 503, or its stream ends and EventSource reconnects.
 */
function watch(cluster: Cluster, node: string): { signal: AbortSignal; closed(): void } {
	const controller = new AbortController();
	const timer = setInterval(() => {
		if (!cluster.isAlive(node)) controller.abort();
	}, 1000);
	timer.unref();
	return { signal: controller.signal, closed: () => clearInterval(timer) };
}

function decoded(segment: string): string | undefined {
	try {
		return decodeURIComponent(segment);
	} catch {
		return undefined;
	}
}

/** The request body, once, bounded (GET and friends have none). */
async function readBody(request: Request, maxBytes: number): Promise<Uint8Array | undefined> {
	if (request.method === "GET" || request.method === "HEAD" || !request.body) return undefined;
	const declared = Number(request.headers.get("content-length") ?? 0);
	const tooLarge = () => new ApiError(413, "body_too_large", `Request bodies are limited to ${maxBytes} bytes`);
	if (declared > maxBytes) throw tooLarge();
	const bytes = new Uint8Array(await request.arrayBuffer());
	if (bytes.byteLength > maxBytes) throw tooLarge();
	return bytes;
}

function rebuilt(request: Request, body: Uint8Array): Request {
	return new Request(request.url, {
		method: request.method,
		headers: request.headers,
		body,
		signal: request.signal,
		duplex: "half",
	} as RequestInit);
}

/** Cluster-wide reads straight from PostgreSQL (besides the session routes). */
const readsTheDatabase = new Set(["/v1/approvals/history", "/v1/audit"]);

type Operation = { responses?: Record<string, { description?: string; headers?: Record<string, unknown> }> };
const methods = new Set(["get", "put", "post", "delete", "patch"]);

/**
 * In the spec: every session operation (listing and creating included) and the cluster-wide
 * history and audit log may answer 503 in cluster mode
 * (the database is out of reach, the node running the session cannot be reached, the node is
 * stopping); each says when to retry. These are the statuses a client retries (README).
 */
export function declareClusterRetries(document: { paths?: Record<string, Record<string, unknown>> }): void {
	for (const [path, item] of Object.entries(document.paths ?? {})) {
		if (!path.startsWith("/v1/sessions") && !readsTheDatabase.has(path)) continue;
		for (const [method, operation] of Object.entries(item)) {
			if (!methods.has(method)) continue;
			const op = operation as Operation;
			op.responses ??= {};
			op.responses["503"] ??= {
				description: "",
				content: { "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } } },
			} as never;
			const unavailable = op.responses["503"];
			unavailable.description =
				"Retry after `Retry-After` seconds (on any node): the gateway is shutting down (`shutting_down`), or in cluster mode the database is out of reach (`database_unavailable`), the node running the session cannot be reached (`owner_unreachable`) or the session moved (`node_lost`). Nothing of a refused request reached pi, except `owner_unreachable` for a command that was sent before its node stopped answering";
			unavailable.headers = {
				...unavailable.headers,
				"Retry-After": {
					description: "Seconds to wait before retrying (cluster-mode 503s)",
					schema: { type: "integer", minimum: 0 },
				},
			};
		}
	}
}
