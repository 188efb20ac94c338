import type { DatabaseSync } from "node:sqlite";
import type { SharedRecords } from "../store/postgres/shared-records.ts";
import { approvalHistoryTable } from "../store/sqlite/schema.ts";
import type { Approval } from "./approvals.ts";
import { eventJson, type LoggedEvent } from "./event-log.ts";
import { recordPage } from "./record-page.ts";

/** Prune every this many writes (a DELETE per write would be wasted work). */
const pruneEvery = 100;

/**
 * Every resolved approval — who, when, what — in gateway.db, so the record outlives the session's
 * in-memory list and a gateway restart. Bounded by age and by count; fed from the event hub. In
 * cluster mode (`shared`) it is the cluster's, in PostgreSQL: every node's answers, read through any.
 */
export class ApprovalHistory {
	readonly #db: DatabaseSync;
	readonly #keepMs: number;
	readonly #maxRows: number;
	#writes = 0;
	#unsubscribe: (() => void) | undefined;
	readonly #shared: SharedRecords | undefined;

	constructor(db: DatabaseSync, keepMs: number, maxRows: number, shared?: SharedRecords) {
		this.#db = db;
		this.#shared = shared;
		this.#keepMs = keepMs;
		this.#maxRows = maxRows;
		db.exec(approvalHistoryTable);
		this.prune();
	}

	start(hub: { subscribeAll(listener: (sessionId: string, event: LoggedEvent) => void): () => void }): void {
		this.#unsubscribe = hub.subscribeAll((_sessionId, event) => {
			if (event.type !== "approval_resolved" || !this.#db.isOpen) return;
			try {
				this.#record(eventJson<{ approval: Approval }>(event).approval);
			} catch {
				// A full disk loses history rows, never an answer: the approval itself went through.
			}
		});
	}

	stop(): void {
		this.#unsubscribe?.();
	}

	#record(approval: Approval): void {
		const resolvedAt = approval.resolvedAt ?? new Date().toISOString();
		if (this.#shared) {
			const columns = {
				session_id: approval.sessionId,
				id: approval.id,
				status: approval.status,
				resolved_at: resolvedAt,
			};
			this.#shared.append(columns, approval);
			if (++this.#writes % pruneEvery === 0) void this.#shared.prune(new Date(Date.now() - this.#keepMs));
			return;
		}
		this.#db
			.prepare(
				"INSERT OR REPLACE INTO approval_history (session_id, id, status, resolved_at, record) VALUES (?, ?, ?, ?, ?)",
			)
			.run(approval.sessionId, approval.id, approval.status, resolvedAt, JSON.stringify(approval));
		if (++this.#writes % pruneEvery === 0) this.prune();
	}

	prune(): void {
		this.#db
			.prepare("DELETE FROM approval_history WHERE resolved_at < ?")
			.run(new Date(Date.now() - this.#keepMs).toISOString());
		this.#db
			.prepare(
				`DELETE FROM approval_history WHERE rowid IN (
					SELECT rowid FROM approval_history ORDER BY resolved_at DESC, rowid DESC LIMIT -1 OFFSET ?)`,
			)
			.run(this.#maxRows);
	}

	/** Newest first; `before` is the `nextCursor` of an earlier page. */
	async list(query: { status?: string; sessionId?: string; limit: number; before?: number }): Promise<{
		approvals: Approval[];
		nextCursor: string | null;
	}> {
		const filters = { status: query.status, session_id: query.sessionId };
		const { records, nextCursor } = this.#shared
			? await this.#shared.page<Approval>(filters, query.limit, query.before)
			: recordPage<Approval>(this.#db, "approval_history", filters, query.limit, query.before);
		return { approvals: records, nextCursor };
	}
}
