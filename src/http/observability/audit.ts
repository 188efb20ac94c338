import { z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import type { Logger } from "pino";
import { shareFor, shareOf } from "../../config/config.ts";
import type { ScopedRoutes } from "../auth/principals.ts";
import type { AppEnv } from "../transport/openapi.ts";
import { decodedSegment } from "../transport/params.ts";

/** An entry as the audit log holds it, for the spec's examples. */
export const auditExample = {
	at: "2026-12-01T10:00:01.000Z",
	principal: "alice",
	action: "sessions.prompt",
	method: "POST",
	path: "/v1/sessions/ses_Qm9wYXJ0aWFs/prompt",
	sessionId: "ses_Qm9wYXJ0aWFs",
	status: 200,
	from: "127.0.0.1",
	requestId: "6f9619ff-8b86-4d11-b42d-00c04fc964ff",
};

export const AuditEntry = z
	.object({
		at: z.string().openapi({ format: "date-time", description: "When the request arrived" }),
		principal: z.string().openapi({ description: "The authenticated principal" }),
		action: z
			.string()
			.openapi({ description: "The operation's dotted name (`x-operation-name`)", example: "sessions.prompt" }),
		method: z.string().describe("The HTTP method"),
		path: z.string().describe("The request's path"),
		sessionId: z.string().nullable().describe("The session it was about; null when none"),
		status: z.number().int().openapi({ description: "The HTTP status answered (denials are recorded too)" }),
		from: z.string().nullable().openapi({ description: "The client's address" }),
		requestId: z.string().describe("The request id (X-Request-Id), as in the log"),
	})
	.openapi("AuditEntry", {
		description: "One state-changing request: who, what, when, from where, and how it ended",
		example: auditExample,
	});
export type AuditEntry = z.infer<typeof AuditEntry>;

/** What a page of the log is filtered by. */
export interface AuditQuery {
	principal?: string;
	sessionId?: string;
}

/**
 * Where the log is kept beyond memory, bounded with fair shares (each principal keeps its newest
 * entries up to its share; past the cap the principal that holds the most gives up its oldest):
 * gateway.db (src/store/sqlite/audit.ts), or in cluster mode the cluster's PostgreSQL
 * (src/store/postgres/shared-records.ts: every node's entries, read through any). server.ts picks one.
 */
export interface AuditStore {
	/** Fails soft: a full disk loses audit rows (the log line still has them), never the request itself. */
	add(entry: AuditEntry): void;
	/** Newest first; `before` is the `nextCursor` of an earlier page. */
	page(
		query: AuditQuery,
		limit: number,
		before?: number,
	): Promise<{ records: AuditEntry[]; nextCursor: string | null }>;
}

/**
 * Who changed what, when and from where: each state-changing request, kept in an AuditStore (so
 * it outlives a restart) and written as a JSON line to the log too (`msg: "audit"`). In memory when
 * there is no store (an app in a test), with the same fair shares as the stores: `share` entries per
 * principal, `maxRows` in all.
 */
export class AuditLog {
	readonly #store: AuditStore | undefined;
	readonly #maxRows: number;
	readonly #share: number;
	/** Oldest first; `seq` is the cursor, as a store's rowid is. */
	readonly #memory: { seq: number; entry: AuditEntry }[] = [];
	readonly #held = new Map<string, number>();
	#seq = 0;

	constructor(store: AuditStore | undefined, maxRows: number, share = shareOf(maxRows)) {
		this.#store = store;
		this.#maxRows = maxRows;
		this.#share = share;
	}

	record(entry: AuditEntry): void {
		if (this.#store) {
			this.#store.add(entry);
			return;
		}
		this.#memory.push({ seq: ++this.#seq, entry });
		this.#held.set(entry.principal, (this.#held.get(entry.principal) ?? 0) + 1);
		if ((this.#held.get(entry.principal) ?? 0) > shareFor(entry.principal, this.#share, this.#maxRows))
			this.#evict(entry.principal);
		while (this.#memory.length > this.#maxRows) {
			const [most] = [...this.#held].sort((a, b) => b[1] - a[1])[0] ?? [];
			if (most === undefined) break;
			this.#evict(most);
		}
	}

	/** Newest first (by when they were answered); `before` is the `nextCursor` of an earlier page. */
	async list(query: { principal?: string; sessionId?: string; limit: number; before?: number }): Promise<{
		entries: AuditEntry[];
		nextCursor: string | null;
	}> {
		if (this.#store) {
			const filters = { principal: query.principal, sessionId: query.sessionId };
			const { records, nextCursor } = await this.#store.page(filters, query.limit, query.before);
			return { entries: records, nextCursor };
		}
		const all = this.#memory
			.filter(({ entry, seq }) => matches(entry, query) && (query.before === undefined || seq < query.before))
			.reverse();
		const page = all.slice(0, query.limit);
		return {
			entries: page.map((r) => r.entry),
			nextCursor: all.length > query.limit ? String(page.at(-1)?.seq) : null,
		};
	}

	/** The principal's oldest entry goes (a scan of the list: memory is the store of an app in a test). */
	#evict(principal: string): void {
		const index = this.#memory.findIndex((r) => r.entry.principal === principal);
		if (index < 0) return;
		this.#memory.splice(index, 1);
		const left = (this.#held.get(principal) ?? 1) - 1;
		if (left > 0) this.#held.set(principal, left);
		else this.#held.delete(principal);
	}
}

function matches(entry: AuditEntry, query: { principal?: string; sessionId?: string }): boolean {
	return (
		(!query.principal || entry.principal === query.principal) &&
		(!query.sessionId || entry.sessionId === query.sessionId)
	);
}

const sessionPath = /^\/v1\/sessions\/([^/]+)(?:\/|$)/;
const reads = new Set(["GET", "HEAD", "OPTIONS"]);

/** Records every authenticated state-changing request, after it was answered (its status known). */
export function audit(log: AuditLog, routes: ScopedRoutes, logger: Logger): MiddlewareHandler<AppEnv> {
	return async function auditMiddleware(c, next) {
		const at = new Date().toISOString();
		await next();
		const principal = c.get("principal");
		// A request forwarded to the node that runs its session is recorded there, once.
		if (!principal || reads.has(c.req.method) || c.get("forwardedTo")) return;
		const operation = routes.operation(c.req.method, c.req.path);
		if (!operation) return;
		const raw = sessionPath.exec(c.req.path)?.[1];
		// A created session is named by the answer's Location.
		const created = /^\/v1\/sessions\/([^/]+)$/.exec(c.res.headers.get("location") ?? "")?.[1];
		const incoming = (c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming;
		const entry: AuditEntry = {
			at,
			principal: principal.name,
			action: operation,
			method: c.req.method,
			path: c.req.path,
			sessionId: raw !== undefined ? (decodedSegment(raw) ?? raw) : (created ?? null),
			status: c.res.status,
			from: c.get("clientAddress") ?? incoming?.socket?.remoteAddress ?? null,
			requestId: c.get("requestId"),
		};
		log.record(entry);
		logger.info({ audit: entry }, "audit");
	};
}
