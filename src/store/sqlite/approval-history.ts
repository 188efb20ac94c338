import type { DatabaseSync } from "node:sqlite";
import { shareOf } from "../../config/config.ts";
import type { Approval, ApprovalHistoryQuery, ApprovalHistoryStore } from "../../sessions/dialogs/index.ts";
import { FairShare } from "./fair-share.ts";
import { migrate } from "./migrations.ts";
import { recordPage } from "./record-page.ts";
import { accessTable, approvalHistoryIndexes, approvalHistoryTable, type CountedRows } from "./schema.ts";

/** Prune by age every this many writes (a DELETE per write would be wasted work). */
const pruneEvery = 100;

/** Every row counts in its principal's share of the one table (fair-share.ts). */
const historyRows: CountedRows = {
	store: "approval_history",
	table: "approval_history",
	scope: () => "''",
	counted: () => "1",
};

/**
 * Whose share an approval counts in: the owner of its session (session_access, in the same
 * gateway.db: the node that runs a session holds its record), else the admin's, as SessionAccess
 * says of a session without a record.
 */
const ownerOf = "COALESCE((SELECT owner FROM session_access WHERE session_id = ?), 'admin')";

/** Adds the principal column to a table from before it, in place (rows stay), filled from session_access. */
function addPrincipal(db: DatabaseSync): void {
	const columns = db.prepare("SELECT name FROM pragma_table_info('approval_history')").all() as { name: string }[];
	if (columns.some((c) => c.name === "principal")) return;
	migrate(db, "approval_history.principal", () => {
		db.exec("ALTER TABLE approval_history ADD COLUMN principal TEXT NOT NULL DEFAULT 'admin'");
		db.exec(`UPDATE approval_history SET principal = ${ownerOf.replace("?", "approval_history.session_id")}`);
	});
}

/**
 * Resolved approvals (src/sessions/dialogs/approval-history.ts) in gateway.db, bounded by age and with fair
 * shares: each principal (the owner of the approval's session) keeps its newest `share`, past which
 * its own oldest go; past `maxRows` the principal that holds the most gives up its oldest. So however
 * many dialogs one principal's sessions resolve, another's history stays.
 */
export class SqliteApprovalHistory implements ApprovalHistoryStore {
	readonly #db: DatabaseSync;
	readonly #keepMs: number;
	readonly #maxRows: number;
	readonly #share: number;
	readonly #counts: FairShare;
	#writes = 0;

	constructor(db: DatabaseSync, keepMs: number, maxRows: number, share = shareOf(maxRows)) {
		this.#db = db;
		this.#keepMs = keepMs;
		this.#maxRows = maxRows;
		this.#share = share;
		db.exec(accessTable);
		db.exec(approvalHistoryTable);
		addPrincipal(db);
		db.exec(approvalHistoryIndexes);
		this.#counts = new FairShare(db, historyRows);
		this.prune();
	}

	get open(): boolean {
		return this.#db.isOpen;
	}

	/** The principal whose share an approval of `sessionId` counts in (cluster mode records it with the cluster's row). */
	ownerOf(sessionId: string): string {
		const row = this.#db.prepare(`SELECT ${ownerOf} AS owner`).get(sessionId) as { owner: string };
		return row.owner;
	}

	add(approval: Approval, resolvedAt: string): void {
		// A DELETE and an INSERT, not a REPLACE: the counts' triggers see the row that goes.
		this.#db
			.prepare("DELETE FROM approval_history WHERE session_id = ? AND id = ?")
			.run(approval.sessionId, approval.id);
		const [row] = this.#db
			.prepare(
				`INSERT INTO approval_history (session_id, id, status, resolved_at, record, principal)
				VALUES (?, ?, ?, ?, ?, ${ownerOf}) RETURNING principal`,
			)
			.all(
				approval.sessionId,
				approval.id,
				approval.status,
				resolvedAt,
				JSON.stringify(approval),
				approval.sessionId,
			) as { principal: string }[];
		const evict = this.#db.prepare(
			"DELETE FROM approval_history WHERE rowid IN (SELECT rowid FROM approval_history WHERE principal = ? ORDER BY rowid LIMIT ?)",
		);
		this.#counts.trim(
			"",
			this.#share,
			this.#maxRows,
			(principal, n) => Number(evict.run(principal, n).changes),
			row?.principal,
		);
		if (++this.#writes % pruneEvery === 0) this.prune();
	}

	/** Approvals resolved before the window go (by the age index: only what goes is read). */
	prune(): void {
		this.#db
			.prepare("DELETE FROM approval_history WHERE resolved_at < ?")
			.run(new Date(Date.now() - this.#keepMs).toISOString());
	}

	async page(query: ApprovalHistoryQuery, limit: number, before?: number) {
		const filters = { status: query.status, session_id: query.sessionId };
		return recordPage<Approval>(this.#db, "approval_history", filters, limit, before);
	}
}
