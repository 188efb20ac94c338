import type { MiddlewareHandler } from "hono";
import { rateLimiter } from "hono-rate-limiter";
import type { SessionAccess, SessionRegistry } from "../../sessions/registry/index.ts";
import type { AppEnv } from "../transport/openapi.ts";
import { ApiError } from "../transport/problem.ts";
import { hasScope } from "./principals.ts";

/**
 * Requests per principal per window (hono-rate-limiter, in memory): past it 429 problem+json
 * with `Retry-After` (seconds until the window resets) and the `RateLimit` header.
 */
export function requestLimit(limit: number, windowMs: number): MiddlewareHandler<AppEnv> {
	return rateLimiter<AppEnv>({
		windowMs,
		limit,
		standardHeaders: "draft-7",
		// Runs after authentication: public routes (health checks) have no principal and are not counted.
		skip: (c) => c.get("principal") === undefined,
		keyGenerator: (c) => c.get("principal")?.name ?? "",
		handler: (c) => {
			throw new ApiError(
				429,
				"rate_limited",
				`${c.get("principal")?.name} sent more than ${limit} requests in ${windowMs / 1000} s; retry after Retry-After seconds`,
			);
		},
	});
}

/**
 * The per-principal cap on stored sessions, checked on create: sessions of any status, stopped and
 * crashed ones included: without it one key could fill --max-sessions (crashed sessions stay until
 * deleted) so that nobody else could create one. Admins, the operator, are held only to
 * --max-sessions. (The live share, --max-live-sessions-per-principal, is the registry's: a create
 * and a wake-up alike, live-cap.ts.) It also notes which principals are admins, whose sessions
 * are held to no share when they wake. A fork (`POST …/fork-session`) makes a session too.
 */
const makesSession = /^\/v1\/sessions(\/[^/]+\/fork-session)?$/;

export function sessionLimits(
	maxStored: number,
	registry: SessionRegistry,
	access: SessionAccess,
	admins: Set<string>,
): MiddlewareHandler<AppEnv> {
	return async function sessionLimitsMiddleware(c, next) {
		const principal = c.get("principal");
		if (principal && hasScope(principal, "admin")) admins.add(principal.name);
		if (principal && !hasScope(principal, "admin") && c.req.method === "POST" && makesSession.test(c.req.path)) {
			const owned = registry.list().filter((s) => access.get(s.id).owner === principal.name);
			if (maxStored > 0 && owned.length >= maxStored)
				throw new ApiError(
					429,
					"too_many_sessions",
					`${principal.name} already has ${owned.length} sessions, stopped and crashed ones included (at most ${maxStored}, --max-sessions-per-principal); delete some`,
				);
		}
		return next();
	};
}

type Operation = { security?: Record<string, string[]>[]; responses?: Record<string, { headers?: object }> };
const methods = new Set(["get", "put", "post", "delete", "patch"]);

/**
 * Every authenticated operation can meet the per-principal request limit: its 429 is declared,
 * and every 429 names `Retry-After` (set by the request limit; absent for the other limits).
 */
export function declareRateLimits(document: { paths?: Record<string, Record<string, unknown>> }): void {
	for (const item of Object.values(document.paths ?? {}))
		for (const [method, operation] of Object.entries(item)) {
			const op = operation as Operation;
			if (!methods.has(method) || (op.security && op.security.length === 0)) continue;
			op.responses ??= {};
			op.responses["429"] ??= {
				description: "The principal sent too many requests (--rate-limit-requests)",
				content: { "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } } },
			} as never;
			const tooMany = op.responses["429"];
			tooMany.headers = {
				...tooMany.headers,
				"Retry-After": {
					description: "Seconds until the principal's request window resets (rate_limited only)",
					schema: { type: "integer", minimum: 0 },
				},
			};
		}
}
