import type { DatabaseSync } from "node:sqlite";
import type { AuditEntry, AuditQuery, AuditStore } from "../../http/observability/audit.ts";
import { recordPage } from "./record-page.ts";
import { auditTable } from "./schema.ts";

/** Prune every this many writes (a DELETE per write would be wasted work). */
const pruneEvery = 100;

/** The audit log (src/http/observability/audit.ts) in gateway.db, bounded to the newest `maxRows`. */
export class SqliteAuditLog implements AuditStore {
	readonly #db: DatabaseSync;
	readonly #maxRows: number;
	#writes = 0;

	constructor(db: DatabaseSync, maxRows: number) {
		this.#db = db;
		this.#maxRows = maxRows;
		db.exec(auditTable);
	}

	add(entry: AuditEntry): void {
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
			.prepare(
				"DELETE FROM audit_log WHERE rowid IN (SELECT rowid FROM audit_log ORDER BY rowid DESC LIMIT -1 OFFSET ?)",
			)
			.run(this.#maxRows);
	}

	async page(query: AuditQuery, limit: number, before?: number) {
		const filters = { principal: query.principal, session_id: query.sessionId };
		return recordPage<AuditEntry>(this.#db, "audit_log", filters, limit, before);
	}
}
