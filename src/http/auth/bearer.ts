import { createHash, timingSafeEqual } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../transport/openapi.ts";
import { ApiError } from "../transport/problem.ts";
import { JwtVerifier } from "./jwt.ts";
import { jwtPrefix } from "./jwt-names.ts";
import type { KeyStore } from "./keys.ts";
import { adminPrincipal, type Principal } from "./principals.ts";
import { allEventsScope, type StreamTickets } from "./tickets.ts";

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
