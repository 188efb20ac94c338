import type { DatabaseSync } from "node:sqlite";
import type { AccessStore, SessionAccessRecord } from "../../sessions/registry/index.ts";
import { storedOr507 } from "../storage-full.ts";
import { accessTable } from "./schema.ts";

/** Owners and shares (src/sessions/registry/access.ts) in gateway.db's session_access, next to the registry, not inside it. */
export class SqliteAccessStore implements AccessStore {
	readonly #db: DatabaseSync;

	constructor(db: DatabaseSync) {
		this.#db = db;
		db.exec(accessTable);
	}

	load(): SessionAccessRecord[] {
		return this.#db
			.prepare("SELECT session_id, owner, grants FROM session_access")
			.all()
			.map((row) => ({
				sessionId: String(row.session_id),
				owner: String(row.owner),
				grants: JSON.parse(String(row.grants)),
			}));
	}

	/** Stored first, in effect after (SessionAccess): a grant the disk did not take is refused, not half kept. */
	save(record: SessionAccessRecord): void {
		storedOr507("The session's access was not stored", () => this.keep(record));
	}

	keep(record: SessionAccessRecord): void {
		if (this.#db.isOpen)
			this.#db
				.prepare("INSERT OR REPLACE INTO session_access (session_id, owner, grants) VALUES (?, ?, ?)")
				.run(record.sessionId, record.owner, JSON.stringify(record.grants));
	}

	remove(sessionId: string): void {
		if (this.#db.isOpen) this.#db.prepare("DELETE FROM session_access WHERE session_id = ?").run(sessionId);
	}
}
