import type { DatabaseSync } from "node:sqlite";
import { shareOf } from "../../config/config.ts";
import type { AuditEntry, AuditQuery, AuditStore } from "../../http/observability/audit.ts";
import { FairShare } from "./fair-share.ts";
import { recordPage } from "./record-page.ts";
import { auditTable } from "./schema.ts";

/**
 * The audit log (src/http/observability/audit.ts) in gateway.db, bounded with fair shares: each
 * principal keeps its newest `share` entries; past `maxRows` the principal that holds the most gives
 * up its oldest. So however many requests one principal sends, the admin still reads every other
 * principal's entries.
 */
export class SqliteAuditLog implements AuditStore {
	readonly #db: DatabaseSync;
	readonly #maxRows: number;
	readonly #share: number;
	readonly #counts: FairShare;

	constructor(db: DatabaseSync, maxRows: number, share = shareOf(maxRows)) {
		this.#db = db;
		this.#maxRows = maxRows;
		this.#share = share;
		db.exec(auditTable);
		this.#counts = new FairShare(db, { store: "audit", table: "audit_log", scope: () => "''", counted: () => "1" });
	}

	add(entry: AuditEntry): void {
		if (!this.#db.isOpen) return;
		try {
			this.#db
				.prepare("INSERT INTO audit_log (principal, session_id, record) VALUES (?, ?, ?)")
				.run(entry.principal, entry.sessionId, JSON.stringify(entry));
			const evict = this.#db.prepare(
				"DELETE FROM audit_log WHERE rowid IN (SELECT rowid FROM audit_log WHERE principal = ? ORDER BY rowid LIMIT ?)",
			);
			this.#counts.trim(
				"",
				this.#share,
				this.#maxRows,
				(principal, n) => Number(evict.run(principal, n).changes),
				entry.principal,
			);
		} catch {
			// A full disk loses audit rows (the log line still has it), never the request itself.
		}
	}

	async page(query: AuditQuery, limit: number, before?: number) {
		const filters = { principal: query.principal, session_id: query.sessionId };
		return recordPage<AuditEntry>(this.#db, "audit_log", filters, limit, before);
	}
}
