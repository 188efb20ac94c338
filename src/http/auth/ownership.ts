import type { MiddlewareHandler } from "hono";
import {
	rightsIn,
	type SessionAccess,
	type SessionAccessRecord,
	type SessionRight,
} from "../../sessions/registry/index.ts";
import { GatewayError } from "../../shared/errors.ts";
import type { AppEnv } from "../transport/openapi.ts";
import { decodedSegment } from "../transport/params.ts";
import { hasScope, type Principal, type Scope, type ScopedRoutes } from "./principals.ts";

/** The rights on a session that let an operation of each scope through (any one of them). */
const needed: Record<Exclude<Scope, "admin">, readonly SessionRight[]> = {
	"sessions:read": ["read", "write"],
	"sessions:write": ["write"],
	"approvals:read": ["read", "write", "answer"],
	"approvals:answer": ["answer"],
};

/** Whether `principal` may do what `scope` covers on session `sessionId` (admins may do anything). */
export function mayAccess(access: SessionAccess, principal: Principal, sessionId: string, scope: Scope): boolean {
	return mayAccessRecord(access.get(sessionId), principal, scope);
}

/** The same by an access record (cluster mode: one read from the database for a session no node holds). */
export function mayAccessRecord(record: SessionAccessRecord, principal: Principal, scope: Scope): boolean {
	if (hasScope(principal, "admin")) return true;
	if (scope === "admin") return false;
	const rights = rightsIn(record, principal.name);
	return needed[scope].some((right) => rights.has(right));
}

export const sessionPath = /^\/v1\/sessions\/([^/]+)(?:\/|$)/;

export const notFound = (id: string) => new GatewayError(404, "session_not_found", `No session ${id}`);

/**
 * A session another principal owns is not there: 404, as for an id that never existed, so ids
 * are not revealed. Runs after the scope check, on every `/v1/sessions/{id}/…` operation.
 */
export function sessionOwnership(access: SessionAccess, routes: ScopedRoutes): MiddlewareHandler<AppEnv> {
	return async function sessionOwnershipMiddleware(c, next) {
		const principal = c.get("principal");
		const raw = sessionPath.exec(c.req.path)?.[1];
		const scope = routes.onSession(c.req.method, c.req.path);
		if (!principal || raw === undefined || !scope) return next();
		// An id that does not decode names no session (pathEncoding answers 400 before this).
		const id = decodedSegment(raw);
		if (id === undefined || !mayAccess(access, principal, id, scope)) throw notFound(id ?? raw);
		return next();
	};
}
