import type { MiddlewareHandler } from "hono";
import { runsAs } from "../transport/methods.ts";
import type { AppEnv } from "../transport/openapi.ts";
import { type Principal, Scope } from "../transport/principal.ts";
import { ApiError } from "../transport/problem.ts";
import { routePattern } from "../transport/route-pattern.ts";

// Declared in transport/, whose request context (AppEnv) carries the principal; auth/ decides it.
export { type Principal, Scope, scopes } from "../transport/principal.ts";

export function hasScope(principal: Principal, scope: Scope): boolean {
	return principal.scopes.has("admin") || principal.scopes.has(scope);
}

/** The principal of the single bearer token (and of --no-auth): one admin, as before principals existed. */
export const adminPrincipal: Principal = { name: "admin", scopes: new Set(["admin"]) };

/**
 * The scope an operation needs, by its path template and method. One table for the whole API,
 * so a new route gets a scope without anyone remembering to add one; the spec declares it
 * (`security: [{bearer: [scope]}]`) and the middleware enforces what the spec declares.
 */
export function scopeFor(method: string, template: string): Scope {
	const write = method.toLowerCase() !== "get";
	if (template === "/metrics" || template === "/v1/audit" || template.startsWith("/v1/webhooks")) return "admin";
	if (template.startsWith("/v1/approvals") || /^\/v1\/sessions\/\{id\}\/(approvals|ui)(\/|$)/.test(template))
		return write ? "approvals:answer" : "approvals:read";
	// A stream ticket only opens a stream: reading.
	if (template.endsWith("/events/ticket")) return "sessions:read";
	return write ? "sessions:write" : "sessions:read";
}

type Operation = { security?: Record<string, string[]>[]; responses?: Record<string, unknown> };
type Document = { paths?: Record<string, Record<string, unknown>>; security?: Record<string, string[]>[] };
const methods = new Set(["get", "put", "post", "delete", "patch"]);

/** Writes each authenticated operation's scope into its security requirement. Public ones (`security: []`) stay so. */
export function declareScopes(document: Document): void {
	for (const [template, item] of Object.entries(document.paths ?? {}))
		for (const [method, operation] of Object.entries(item)) {
			if (!methods.has(method)) continue;
			const op = operation as Operation;
			if (op.security && op.security.length === 0) continue;
			// `[{bearer: []}]` as written by the route: any credential, no particular scope (GET /v1/whoami).
			if (op.security?.length === 1 && op.security[0]?.bearer?.length === 0) continue;
			op.security = [{ bearer: [scopeFor(method, template)] }];
			// Any credential may lack the scope: every authenticated operation can answer 403.
			op.responses ??= {};
			op.responses["403"] ??= {
				description: "The credential lacks this operation's scope",
				content: { "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } } },
			};
		}
}

/**
 * Operations that only read the session their path names, whatever scope they need: a fork
 * (`POST …/fork-session`) makes a session of the caller's (sessions:write) from one the caller may
 * read. The ownership check asks for the right of sessions:read on that session.
 */
export const readsItsSession: ReadonlySet<string> = new Set(["sessions.forkSession"]);

/**
 * The scope of each operation, read back from the document (what the spec says is what is enforced).
 * An operation any credential may call (`[{bearer: []}]`) is listed without a scope: it has an
 * operation id for the audit log (POST /mcp changes things) and no scope to check.
 */
export class ScopedRoutes {
	#routes: { method: string; path: RegExp; scope: Scope | undefined; operationId: string }[] = [];

	load(document: Document): void {
		this.#routes = [];
		for (const [template, item] of Object.entries(document.paths ?? {})) {
			const pattern = routePattern(template);
			for (const [method, operation] of Object.entries(item)) {
				const security = (operation as Operation).security;
				// Public (`security: []`): nobody is authenticated, so nothing to check or audit.
				if (!methods.has(method) || !security || security.length === 0) continue;
				const scope = security[0]?.bearer?.[0];
				this.#routes.push({
					method: method.toUpperCase(),
					path: pattern,
					scope: scope === undefined ? undefined : Scope.parse(scope),
					operationId: (operation as { operationId?: string }).operationId ?? `${method} ${template}`,
				});
			}
		}
	}

	/** The scope of the operation `method` runs on `path` (HEAD runs GET's: the same scope, the same owner check). */
	find(method: string, path: string): Scope | undefined {
		return this.#route(method, path)?.scope;
	}

	/** The scope whose right the caller needs on the session the path names (ownership.ts): the operation's own, but for readsItsSession. */
	onSession(method: string, path: string): Scope | undefined {
		const route = this.#route(method, path);
		return route && readsItsSession.has(route.operationId) ? "sessions:read" : route?.scope;
	}

	/** The operationId of an authenticated operation (the audit log's action). */
	operation(method: string, path: string): string | undefined {
		return this.#route(method, path)?.operationId;
	}

	#route(method: string, path: string) {
		const runs = runsAs(method);
		return this.#routes.find((r) => r.method === runs && r.path.test(path));
	}
}

/** 403 problem+json when the authenticated principal lacks the operation's scope. */
export function requireScope(routes: ScopedRoutes): MiddlewareHandler<AppEnv> {
	return async function requireScopeMiddleware(c, next) {
		const principal = c.get("principal");
		const scope = routes.find(c.req.method, c.req.path);
		if (principal && scope && !hasScope(principal, scope))
			throw new ApiError(403, "insufficient_scope", `This operation needs the scope ${scope}`);
		return next();
	};
}
