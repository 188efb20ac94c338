import type { SessionAccess, SessionRegistry } from "../../../sessions/registry/index.ts";
import type { Session } from "../../../sessions/session/index.ts";
import { mayAccess } from "../../auth/ownership.ts";
import { hasScope, type Principal } from "../../auth/principals.ts";
import { decodeCursor, invalidCursor, type SessionListQuery } from "./session-page.ts";
import { type SessionView, viewOf } from "./session-view.ts";

/**
 * This node's sessions that a page may show: visible to the caller, matching the filters, past
 * the cursor, oldest first, at most `limit + 1` (one more tells that more follow). Only those
 * become views: a list of 10,000 sessions renders one page, not all of them.
 */
export function localCandidates(
	registry: SessionRegistry,
	access: SessionAccess,
	principal: Principal | undefined,
	query: SessionListQuery,
	node: string | undefined,
): SessionView[] {
	const after = decodeCursor(query.cursor);
	const afterMs = after ? Date.parse(after.createdAt) : undefined;
	if (Number.isNaN(afterMs)) throw invalidCursor();
	// An admin sees every session: no access record to look up per session.
	const restricted = principal && !hasScope(principal, "admin") ? principal : undefined;
	const page: Session[] = [];
	// In list order from the cursor on (session-order.ts): the walk stops once the page is full.
	for (const session of registry.inListOrder(afterMs, after?.id)) {
		if (query.status !== undefined && session.status !== query.status) continue;
		if (query.node !== undefined && (node !== query.node || session.status === "stopped")) continue;
		if (query.principal !== undefined && access.get(session.id).owner !== query.principal) continue;
		if (restricted && !mayAccess(access, restricted, session.id, "sessions:read")) continue;
		page.push(session);
		if (page.length > query.limit) break;
	}
	return page.map((session) => viewOf(session, node));
}
