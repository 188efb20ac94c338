import type { DatabaseSync } from "node:sqlite";
import type { ApprovalHistoryQuery, ApprovalHistoryStore } from "../../sessions/approval-history.ts";
import type { Approval } from "../../sessions/approvals.ts";
import { recordPage } from "./record-page.ts";
import { approvalHistoryTable } from "./schema.ts";

/** Prune every this many writes (a DELETE per write would be wasted work). */
const pruneEvery = 100;

/** Resolved approvals (src/sessions/approval-history.ts) in gateway.db, bounded by age and by count. */
export class SqliteApprovalHistory implements ApprovalHistoryStore {
	readonly #db: DatabaseSync;
	readonly #keepMs: number;
	readonly #maxRows: number;
	#writes = 0;

	constructor(db: DatabaseSync, keepMs: number, maxRows: number) {
		this.#db = db;
		this.#keepMs = keepMs;
		this.#maxRows = maxRows;
		db.exec(approvalHistoryTable);
		this.prune();
	}

	get open(): boolean {
		return this.#db.isOpen;
	}

	add(approval: Approval, resolvedAt: string): void {
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

	async page(query: ApprovalHistoryQuery, limit: number, before?: number) {
		const filters = { status: query.status, session_id: query.sessionId };
		return recordPage<Approval>(this.#db, "approval_history", filters, limit, before);
	}
}
