import type { DatabaseSync } from "node:sqlite";
import { z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import type { Logger } from "pino";
import { recordPage } from "../../sessions/record-page.ts";
import type { SharedRecords } from "../../store/postgres/shared-records.ts";
import { auditTable } from "../../store/sqlite/schema.ts";
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

/** Prune every this many writes (a DELETE per write would be wasted work). */
const pruneEvery = 100;

/**
 * Who changed what, when and from where: each state-changing request, in its own table of
 * gateway.db (so it outlives a restart), bounded to the newest `maxRows`, and written as a JSON
 * line to the log too (`msg: "audit"`). In memory when there is no database (an app in a test).
 */
export class AuditLog {
	readonly #db: DatabaseSync | undefined;
	readonly #maxRows: number;
	readonly #memory: AuditEntry[] = [];
	#writes = 0;
	readonly #shared: SharedRecords | undefined;

	/** `shared`: cluster mode, the cluster's log in PostgreSQL (every node's entries, read through any). */
	constructor(db: DatabaseSync | undefined, maxRows: number, shared?: SharedRecords) {
		this.#db = db;
		this.#shared = shared;
		this.#maxRows = maxRows;
		db?.exec(auditTable);
	}

	record(entry: AuditEntry): void {
		if (this.#shared) {
			this.#shared.append({ principal: entry.principal, session_id: entry.sessionId }, entry);
			return;
		}
		if (!this.#db) {
			this.#memory.push(entry);
			if (this.#memory.length > this.#maxRows) this.#memory.shift();
			return;
		}
		if (!this.#db.isOpen) return;
		try {
			this.#db
				.prepare("INSERT INTO audit_log (principal, session_id, record) VALUES (?, ?, ?)")
				.run(entry.principal, entry.sessionId, JSON.stringify(entry));
			if (++this.#writes % pruneEvery === 0) this.prune();
		} catch {
			// A full disk loses audit rows (the log line still has it), never the request itself.
		}
	}

	prune(): void {
		this.#db
			?.prepare(
				"DELETE FROM audit_log WHERE rowid IN (SELECT rowid FROM audit_log ORDER BY rowid DESC LIMIT -1 OFFSET ?)",
			)
			.run(this.#maxRows);
	}

	/** Newest first (by when they were answered); `before` is the `nextCursor` of an earlier page. */
	async list(query: { principal?: string; sessionId?: string; limit: number; before?: number }): Promise<{
		entries: AuditEntry[];
		nextCursor: string | null;
	}> {
		if (this.#shared) {
			const filters = { principal: query.principal, session_id: query.sessionId };
			const { records, nextCursor } = await this.#shared.page<AuditEntry>(filters, query.limit, query.before);
			return { entries: records, nextCursor };
		}
		if (!this.#db) {
			const all = this.#memory
				.map((entry, i) => ({ rowid: i + 1, entry }))
				.filter(({ entry, rowid }) => matches(entry, query) && (query.before === undefined || rowid < query.before))
				.reverse();
			const page = all.slice(0, query.limit);
			return {
				entries: page.map((r) => r.entry),
				nextCursor: all.length > query.limit ? String(page.at(-1)?.rowid) : null,
			};
		}
		const { records, nextCursor } = recordPage<AuditEntry>(
			this.#db,
			"audit_log",
			{ principal: query.principal, session_id: query.sessionId },
			query.limit,
			query.before,
		);
		return { entries: records, nextCursor };
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
