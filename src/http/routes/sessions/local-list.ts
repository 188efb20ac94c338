import type { SessionAccess, SessionRegistry } from "../../../sessions/registry/index.ts";
import type { Session } from "../../../sessions/session/index.ts";
import { mayAccess } from "../../auth/ownership.ts";
import type { Principal } from "../../auth/principals.ts";
import { comparePositions, decodeCursor, type Position, type SessionListQuery } from "./session-page.ts";
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
	const matching: { session: Session; at: Position }[] = [];
	for (const session of registry.list()) {
		if (query.status !== undefined && session.status !== query.status) continue;
		if (query.node !== undefined && (node !== query.node || session.status === "stopped")) continue;
		if (query.principal !== undefined && access.get(session.id).owner !== query.principal) continue;
		if (principal && !mayAccess(access, principal, session.id, "sessions:read")) continue;
		const at = { createdAt: session.createdAt.toISOString(), id: session.id };
		if (after && comparePositions(at, after) <= 0) continue;
		matching.push({ session, at });
	}
	matching.sort((a, b) => comparePositions(a.at, b.at));
	return matching.slice(0, query.limit + 1).map(({ session }) => viewOf(session, node));
}
