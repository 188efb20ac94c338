import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "./openapi.ts";
import { ApiError } from "./problem.ts";

/**
 * No operation takes a query parameter more than once, so `?limit=1&limit=2` is a mistake: it is
 * answered here, for every route, with a problem that names the parameter, before a schema reads
 * an array where it wants a number ("expected number, received NaN") and before any handler runs.
 * The name is the client's own text: it goes into the answer as JSON data, never into a pattern.
 */
export function singleQueryParameters(): MiddlewareHandler<AppEnv> {
	return async function singleQueryParametersMiddleware(c, next) {
		const url = c.req.url;
		const at = url.indexOf("?");
		if (at === -1) return next();
		const seen = new Set<string>();
		for (const name of new URLSearchParams(url.slice(at + 1)).keys()) {
			if (!seen.has(name)) {
				seen.add(name);
				continue;
			}
			throw new ApiError(
				400,
				"repeated_query_parameter",
				`The query parameter ${JSON.stringify(name)} is given more than once; give it once (e.g. ?${name}=…)`,
				{ issues: [{ path: name, message: "given more than once" }] },
			);
		}
		return next();
	};
}
