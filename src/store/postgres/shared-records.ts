import type pg from "pg";
import type { Logger } from "pino";
import type { AuditEntry, AuditQuery, AuditStore } from "../../http/observability/audit.ts";
import type { Approval, ApprovalHistoryQuery, ApprovalHistoryStore } from "../../sessions/dialogs/index.ts";
import { type SharedTable, trimShares } from "./fair-share.ts";
import { needDatabase } from "./schema.ts";

/** Prune approval history by age every this many writes (a DELETE per write would be wasted work). */
const pruneEvery = 100;

/** A table's fair shares (fair-share.ts): a principal's oldest rows go first, by its (principal, seq) index. */
const sharesOf = (store: SharedTable["store"], table: string): SharedTable => ({
	store,
	evict: `DELETE FROM ${table} WHERE seq IN (SELECT seq FROM ${table} WHERE principal = $1 ORDER BY seq LIMIT $2)`,
});

/**
 * The tables kept this way: the columns written, which a page may filter on (from code, never from a
 * request), and their fair shares, counted by the `principal` column.
 */
const tables = {
	approval_history: {
		columns: ["session_id", "id", "status", "resolved_at", "principal"],
		key: "(session_id, id)",
		shares: sharesOf("approval_history", "approval_history"),
	},
	audit_log: { columns: ["principal", "session_id"], key: undefined, shares: sharesOf("audit", "audit_log") },
} as const;
type Table = keyof typeof tables;

/**
 * Cluster mode: a bounded, append-mostly table of JSON records in PostgreSQL that every node
 * writes and reads, for what a client expects to read whole through any node (approval history,
 * the audit log). The same shape as ../sqlite/record-page.ts over SQLite: newest first by a sequence, the
 * `nextCursor` is that sequence. Writes go behind in order and fail soft (a lost history row never
 * costs an answer or a request; the log line has it). Both are bounded with fair shares (`share`
 * rows per principal, then the one that holds the most gives up its oldest), trimmed after each
 * write; approval history by age too.
 */
export class SharedRecords {
	readonly #pool: pg.Pool;
	readonly #table: Table;
	readonly #maxRows: number;
	readonly #share: number;
	readonly #logger: Logger;
	#queue: Promise<void> = Promise.resolve();

	constructor(pool: pg.Pool, table: Table, maxRows: number, logger: Logger, share = maxRows) {
		this.#pool = pool;
		this.#table = table;
		this.#maxRows = maxRows;
		this.#share = share;
		this.#logger = logger;
	}

	/** Adds (or, for a table with a key, replaces) a record; `columns` are the filterable ones. */
	append(columns: Record<string, string | null>, record: unknown): void {
		const { columns: names, key, shares } = tables[this.#table];
		const values = names.map((n) => columns[n] ?? null);
		const placeholders = names.map((_, i) => `$${i + 1}`).join(", ");
		const update = key ? `ON CONFLICT ${key} DO UPDATE SET record = EXCLUDED.record, status = EXCLUDED.status` : "";
		const sql = `INSERT INTO ${this.#table} (${names.join(", ")}, record) VALUES (${placeholders}, $${names.length + 1}) ${update}`;
		const principal = columns.principal;
		this.#queue = this.#queue.then(async () => {
			try {
				await this.#pool.query(sql, [...values, JSON.stringify(record)]);
				if (typeof principal === "string") await trimShares(this.#pool, shares, principal, this.#share, this.#maxRows);
			} catch (error) {
				this.#logger.warn({ err: error, table: this.#table }, "cluster: a record was not written");
			}
		});
	}

	/** Approval history resolved before `olderThan` goes (the count is kept by the fair shares, at each write). */
	async prune(olderThan: Date): Promise<void> {
		if (this.#table === "approval_history")
			await this.#pool.query("DELETE FROM approval_history WHERE resolved_at < $1", [olderThan]);
	}

	/** One page, newest first; an undefined filter matches anything; `before` is an earlier `nextCursor`. */
	async page<T>(
		filters: Record<string, string | undefined>,
		limit: number,
		before?: number,
	): Promise<{ records: T[]; nextCursor: string | null }> {
		// What this node wrote a moment ago is in the page (a client reads its own writes).
		await this.#queue;
		const where = ["true"];
		const args: (string | number)[] = [];
		for (const [column, value] of Object.entries(filters)) {
			if (value === undefined || value === "" || !(tables[this.#table].columns as readonly string[]).includes(column))
				continue;
			args.push(value);
			where.push(`${column} = $${args.length}`);
		}
		if (before !== undefined) {
			args.push(before);
			where.push(`seq < $${args.length}`);
		}
		args.push(limit + 1);
		const { rows } = await needDatabase(`The ${this.#table.replace("_", " ")} cannot be read`, () =>
			this.#pool.query<{ seq: string; record: string }>(
				`SELECT seq, record FROM ${this.#table} WHERE ${where.join(" AND ")} ORDER BY seq DESC LIMIT $${args.length}`,
				args,
			),
		);
		const page = rows.slice(0, limit);
		return {
			records: page.map((r) => JSON.parse(r.record) as T),
			nextCursor: rows.length > limit ? String(page.at(-1)?.seq) : null,
		};
	}
}

/**
 * The cluster's approval history. `local` is the node's own history in gateway.db: while it is
 * open the node records what resolves (its shutdown ends that, as on one node), and it names the
 * owner of the approval's session (the node that runs a session holds its record), whose share the
 * row counts in.
 */
export class SharedApprovalHistory implements ApprovalHistoryStore {
	readonly #records: SharedRecords;
	readonly #keepMs: number;
	readonly #local: { readonly open: boolean; ownerOf(sessionId: string): string };
	#writes = 0;

	constructor(
		records: SharedRecords,
		keepMs: number,
		local: { readonly open: boolean; ownerOf(sessionId: string): string },
	) {
		this.#records = records;
		this.#keepMs = keepMs;
		this.#local = local;
	}

	get open(): boolean {
		return this.#local.open;
	}

	add(approval: Approval, resolvedAt: string): void {
		const columns = {
			session_id: approval.sessionId,
			id: approval.id,
			status: approval.status,
			resolved_at: resolvedAt,
			principal: this.#local.ownerOf(approval.sessionId),
		};
		this.#records.append(columns, approval);
		if (++this.#writes % pruneEvery === 0) void this.#records.prune(new Date(Date.now() - this.#keepMs));
	}

	page(query: ApprovalHistoryQuery, limit: number, before?: number) {
		return this.#records.page<Approval>({ status: query.status, session_id: query.sessionId }, limit, before);
	}
}

/** The cluster's audit log: every node's entries, read through any. */
export class SharedAuditLog implements AuditStore {
	readonly #records: SharedRecords;

	constructor(records: SharedRecords) {
		this.#records = records;
	}

	add(entry: AuditEntry): void {
		this.#records.append({ principal: entry.principal, session_id: entry.sessionId }, entry);
	}

	page(query: AuditQuery, limit: number, before?: number) {
		return this.#records.page<AuditEntry>({ principal: query.principal, session_id: query.sessionId }, limit, before);
	}
}
