import { randomUUID } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import type { Logger } from "pino";
import type { AppEnv } from "./openapi.ts";
import { decodedSegment } from "./params.ts";
import { ApiError } from "./problem.ts";

/** X-Request-Id in and out: a caller's id (if sane) or a fresh one; problem+json `instance` uses it. */
export function requestId(): MiddlewareHandler<AppEnv> {
	return async function requestIdMiddleware(c, next) {
		const given = c.req.header("x-request-id");
		const id = given && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
		c.set("requestId", id);
		c.header("X-Request-Id", id);
		await next();
	};
}

/** One log line per request, with its status and duration. */
export function accessLog(logger: Logger): MiddlewareHandler<AppEnv> {
	return async function accessLogMiddleware(c, next) {
		const started = performance.now();
		await next();
		logger.info(
			{
				requestId: c.get("requestId"),
				method: c.req.method,
				path: c.req.path,
				status: c.res.status,
				ms: Math.round((performance.now() - started) * 10) / 10,
			},
			"request",
		);
	};
}

/**
 * A path whose percent-escapes do not decode (`%ff`, `%E0%A4%A`) names nothing: 400 before any
 * code reads an id from it (ownership, audit, cluster routing), so none of them can throw a 500.
 */
export function pathEncoding(): MiddlewareHandler<AppEnv> {
	return async function pathEncodingMiddleware(c, next) {
		// The path as sent: URL keeps percent-escapes as they are (Hono's c.req.path is decoded).
		const raw = new URL(c.req.url).pathname;
		if (raw.includes("%") && decodedSegment(raw) === undefined)
			throw new ApiError(400, "invalid_path", "The path has a malformed percent-escape (each %XX must form UTF-8)");
		return next();
	};
}

const loopbackNames = new Set(["localhost", "127.0.0.1", "[::1]", "::1"]);

/** Host-header allow-list: a DNS-rebinding page cannot reach a loopback gateway under its own name. */
export function hostCheck(allowed: readonly string[]): MiddlewareHandler<AppEnv> {
	const extra = new Set(allowed.map((h) => h.toLowerCase()));
	return async function hostCheckMiddleware(c, next) {
		const host = (c.req.header("host") ?? "").toLowerCase();
		const name = host.startsWith("[") ? host.slice(0, host.indexOf("]") + 1) : host.split(":")[0];
		if (!name || loopbackNames.has(name) || extra.has(name) || extra.has(host) || extra.has("*")) return next();
		throw new ApiError(421, "host_not_allowed", `Host ${JSON.stringify(host)} is not allowed (see --allowed-hosts)`);
	};
}
