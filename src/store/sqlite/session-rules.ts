import type { DatabaseSync } from "node:sqlite";
import type { PolicyRule, RulesStore } from "../../sessions/dialogs/index.ts";
import { sessionRulesTable } from "./schema.ts";

/** Remembered approval rules (src/sessions/dialogs/policy-engine.ts) in gateway.db's approval_session_rules. */
export class SqliteRulesStore implements RulesStore {
	readonly #db: DatabaseSync;

	constructor(db: DatabaseSync) {
		this.#db = db;
		db.exec(sessionRulesTable);
	}

	rules(sessionId: string): PolicyRule[] {
		if (!this.#db.isOpen) return [];
		const row = this.#db.prepare("SELECT rules FROM approval_session_rules WHERE session_id = ?").get(sessionId) as
			| { rules: string }
			| undefined;
		return row ? (JSON.parse(row.rules) as PolicyRule[]) : [];
	}

	save(sessionId: string, rules: PolicyRule[]): void {
		if (!this.#db.isOpen) return;
		this.#db
			.prepare("INSERT OR REPLACE INTO approval_session_rules (session_id, rules) VALUES (?, ?)")
			.run(sessionId, JSON.stringify(rules));
	}
}
