import { z } from "@hono/zod-openapi";
import { SessionStatus } from "../../../sessions/session/index.ts";
import { hasScope, type Principal } from "../../auth/principals.ts";
import { ApiError } from "../../transport/problem.ts";
import { SessionView, sessionExample } from "./session-view.ts";

/**
 * Paging of GET /v1/sessions: oldest first by (createdAt, id), the id compared by code unit (as
 * PostgreSQL's `COLLATE "C"` does), so every node and the database agree on one order. A cursor
 * is that pair of the last session of a page, base64url-encoded: opaque to clients, stable while
 * sessions come and go (a deleted session's cursor still says where to go on).
 */
export const defaultSessionPage = 100;

export const SessionListQuery = z.object({
	limit: z.coerce
		.number()
		.int()
		.min(1)
		.max(500)
		.default(defaultSessionPage)
		.openapi({ description: `Sessions per page (default ${defaultSessionPage}, also when the call names no limit)` }),
	cursor: z
		.string()
		.regex(/^[A-Za-z0-9_-]{1,400}$/, "a nextCursor from an earlier page")
		.optional()
		.openapi({ description: "`nextCursor` of an earlier page: only sessions created after its last one" }),
	status: SessionStatus.optional().openapi({ param: { description: "Only sessions in this status", example: "idle" } }),
	node: z.string().min(1, "name a node (or leave node out)").max(100).optional().openapi({
		description: "Cluster mode: only sessions this node runs (`node` of a session); none on a single gateway",
	}),
	principal: z.string().min(1, "name a principal (or leave principal out)").max(200).optional().openapi({
		description: "Only sessions this principal owns; naming another principal than the caller's needs the admin scope",
	}),
});
export type SessionListQuery = z.infer<typeof SessionListQuery>;

export const SessionList = z
	.object({
		sessions: z.array(SessionView).describe("The sessions of this page, oldest first"),
		nextCursor: z
			.string()
			.nullable()
			.openapi({ description: "Pass as `cursor` for the next page; null when this page is the last" }),
		hasMore: z.boolean().openapi({ description: "More sessions lie beyond this page (then `nextCursor` is set)" }),
	})
	.openapi("SessionList", {
		description: "One page of sessions",
		example: { sessions: [sessionExample], nextCursor: null, hasMore: false },
	});
export type SessionList = z.infer<typeof SessionList>;

export interface Position {
	createdAt: string;
	id: string;
}

export function encodeCursor(at: Position): string {
	return Buffer.from(`${at.createdAt} ${at.id}`).toString("base64url");
}

export const invalidCursor = () =>
	new ApiError(400, "invalid_cursor", "cursor is not a nextCursor this gateway handed out");

export function decodeCursor(cursor: string | undefined): Position | undefined {
	if (cursor === undefined) return undefined;
	const match = /^(\d{4}-\d\d-\d\dT[\d:.]+Z) (\S{1,200})$/.exec(Buffer.from(cursor, "base64url").toString());
	if (!match) throw invalidCursor();
	return { createdAt: match[1] as string, id: match[2] as string };
}

export function comparePositions(a: Position, b: Position): number {
	if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? -1 : 1;
	return a.id === b.id ? 0 : a.id < b.id ? -1 : 1;
}

/** The owner a page may be filtered by: anyone's for an admin (or without auth), else only the caller's own. */
export function assertMayFilterBy(principal: Principal | undefined, owner: string | undefined): void {
	if (owner === undefined || !principal || hasScope(principal, "admin") || owner === principal.name) return;
	throw new ApiError(403, "insufficient_scope", "Listing another principal's sessions needs the admin scope");
}

/**
 * One page out of candidates already filtered and past the cursor (in any order, possibly more
 * than `limit`); `more` says a source had more than it gave (a peer's own hasMore).
 */
export function pageOfViews(candidates: Iterable<SessionView>, limit: number, more = false): SessionList {
	const sorted = [...candidates].sort(comparePositions);
	const sessions = sorted.slice(0, limit);
	const hasMore = more || sorted.length > limit;
	const last = sessions.at(-1);
	return { sessions, nextCursor: hasMore && last ? encodeCursor(last) : null, hasMore };
}
