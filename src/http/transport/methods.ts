import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "./openapi.ts";
import { ApiError } from "./problem.ts";
import { routePattern } from "./route-pattern.ts";

/**
 * The method a request runs: Hono answers HEAD with the GET handler, so every check keyed by
 * method (scopes, ownership, audit, the spec's operation) must look HEAD up as GET, or HEAD
 * would be a way around them (issue 20).
 */
export const runsAs = (method: string) => (method.toUpperCase() === "HEAD" ? "GET" : method.toUpperCase());

const declarable = new Set(["get", "put", "post", "delete", "patch"]);

/** The methods each path of the spec declares, as `Allow` lists them (HEAD with GET, and OPTIONS). */
export class AllowedMethods {
	#paths: { pattern: RegExp; literal: boolean; allow: string }[] = [];

	load(document: { paths?: Record<string, Record<string, unknown>> }): void {
		this.#paths = Object.entries(document.paths ?? {}).map(([template, item]) => {
			const declared = Object.keys(item)
				.filter((m) => declarable.has(m))
				.map((m) => m.toUpperCase());
			if (declared.includes("GET")) declared.push("HEAD");
			const pattern = routePattern(template);
			return {
				pattern,
				literal: !template.includes("{"),
				allow: [...declared, "OPTIONS"].sort().join(", "),
			};
		});
		// A literal path beats a template that also matches it (/v1/approvals/history vs …/{id}).
		this.#paths.sort((a, b) => Number(b.literal) - Number(a.literal));
	}

	/** The `Allow` value of a concrete path, or undefined when the spec has no such path. */
	allow(path: string): string | undefined {
		return this.#paths.find((p) => p.pattern.test(path))?.allow;
	}
}

/**
 * A method the path does not declare never reaches a handler. OPTIONS (without CORS, which answers
 * preflights before this) is 204 with `Allow`; any other is 405 with `Allow` (RFC 9110 §15.5.6).
 * Runs after authentication: on a path that needs a credential, any method without one is 401.
 * Paths outside the spec (the docs page, the spec itself) are left to the router.
 */
export function methodGuard(allowed: AllowedMethods): MiddlewareHandler<AppEnv> {
	return async function methodGuardMiddleware(c, next) {
		const allow = allowed.allow(c.req.path);
		if (allow === undefined) return next();
		if (c.req.method !== "OPTIONS" && allow.split(", ").includes(c.req.method)) return next();
		c.header("Allow", allow);
		if (c.req.method === "OPTIONS") return c.body(null, 204);
		throw new ApiError(405, "method_not_allowed", `${c.req.path} answers ${allow}, not ${c.req.method}`);
	};
}

/**
 * HEAD answers GET's status and headers and no body, and lets go of the body at once: a stream's
 * subscriber slot (or any resource a body holds) is released when the headers are out, instead
 * of living on behind a response nobody reads (66 HEADs held every /v1/events slot: issue 20).
 */
export function headWithoutBody(): MiddlewareHandler<AppEnv> {
	return async function headWithoutBodyMiddleware(c, next) {
		await next();
		if (c.req.method !== "HEAD") return;
		const body = c.res.body;
		if (!body) return;
		c.res = new Response(null, c.res);
		await body.cancel().catch(() => {});
	};
}
