import { createHash, randomUUID, timingSafeEqual } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import type { Logger } from "pino";
import { JwtVerifier } from "../auth/jwt.ts";
import { jwtPrefix } from "../auth/jwt-names.ts";
import type { KeyStore } from "../auth/keys.ts";
import { adminPrincipal, type Principal } from "../auth/principals.ts";
import { allEventsScope, type StreamTickets } from "../auth/tickets.ts";
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

const digest = (value: string) => createHash("sha256").update(value).digest();
const sessionStreamPath = /^\/v1\/sessions\/([^/]+)\/events$/;

/** The ticket scope of a stream a ticket may open: a session's events, or every session's. */
function ticketScope(path: string): string | undefined {
	if (path === "/v1/events") return allEventsScope;
	return sessionStreamPath.exec(path)?.[1];
}

/**
 * A stream ticket's bearer: the principal it was issued to, reading only (it opens the one stream
 * it names). The token's admin stays the admin, so its all-sessions stream sees every session.
 */
function ticketPrincipal(name: string | undefined, keys: KeyStore | undefined): Principal {
	if (name === adminPrincipal.name) return { name, scopes: new Set(["sessions:read", "admin"]) };
	const principal: Principal = { name: name ?? "", scopes: new Set(["sessions:read"]) };
	// A key's principal: its tickets die with its last key (revoked), reconnects and open streams too.
	if (keys && name && !name.startsWith(jwtPrefix))
		principal.current = () => (keys.hasPrincipal(name) ? principal : undefined);
	return principal;
}

/**
 * Who is calling, set as `c.get("principal")`: the single bearer token is the admin principal,
 * compared in constant time (both sides hashed first, so not even the length leaks); an API key
 * from `--keys-file` is its own principal with its scopes. `open` paths (health checks) pass
 * without one; an event stream also accepts a stream ticket in `?ticket=` (EventSource cannot
 * send headers). The long-lived credentials are never read from a URL. A stream opened with a
 * ticket binds it until the stream's connection closes, so EventSource's reconnects to the same
 * URL outlive the ticket's expiry (tickets.ts). With neither a token nor keys (`--no-auth`)
 * every caller is the admin.
 */
export function bearerAuth(
	credentials: { token?: string; keys?: KeyStore; jwt?: JwtVerifier },
	open: ReadonlySet<string>,
	tickets?: StreamTickets,
): MiddlewareHandler<AppEnv> {
	const expected = credentials.token ? digest(credentials.token) : undefined;
	const { keys, jwt } = credentials;
	return async function bearerAuthMiddleware(c, next) {
		if (open.has(c.req.path)) return next();
		if (!expected && !keys && !jwt) {
			c.set("principal", { ...adminPrincipal, anonymous: true });
			return next();
		}
		const header = c.req.header("authorization") ?? "";
		const scheme = /^bearer +/i.exec(header);
		if (scheme) {
			const presented = header.slice(scheme[0].length);
			if (expected && timingSafeEqual(digest(presented), expected)) {
				c.set("principal", adminPrincipal);
				return next();
			}
			const principal =
				keys?.principal(presented) ??
				(jwt && JwtVerifier.looksLikeJwt(presented) ? await jwt.principal(presented) : undefined);
			if (principal) {
				c.set("principal", principal);
				return next();
			}
		}
		const ticket = c.req.query("ticket");
		const scope = c.req.method === "GET" || c.req.method === "HEAD" ? ticketScope(c.req.path) : undefined;
		const holder =
			ticket !== undefined && scope !== undefined && tickets?.verify(ticket, scope)
				? ticketPrincipal(tickets.principalOf(ticket), keys)
				: undefined;
		if (ticket !== undefined && tickets && holder && (!holder.current || holder.current())) {
			c.set("principal", holder);
			await next();
			// Only a stream that opened binds the ticket; it lives on after the handler returns,
			// and its socket closing is its end.
			// A HEAD opened nothing: its body is let go at once (methods.ts).
			if (c.res.status !== 200 || c.req.method !== "GET") return;
			const ended = tickets.opened(ticket);
			const outgoing = (
				c.env as { outgoing?: { destroyed: boolean; once(e: "close", f: () => void): void } } | undefined
			)?.outgoing;
			if (outgoing && !outgoing.destroyed) outgoing.once("close", () => ended());
			else ended();
			return;
		}
		c.header("WWW-Authenticate", 'Bearer realm="pi-gateway"');
		throw new ApiError(
			401,
			"unauthorized",
			ticket === undefined
				? "A valid bearer token is required (Authorization: Bearer …)"
				: "The stream ticket is invalid, expired, or for another stream",
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
