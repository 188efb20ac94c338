import type { DatabaseSync } from "node:sqlite";
import { shareFor } from "../../config/config.ts";
import { migrate } from "./migrations.ts";
import { type CountedRows, fairShareRecount, fairShareTables, fairShareTriggers } from "./schema.ts";

/** Rounds of eviction one trim does at most; each removes at least one row, so a trim after one insert needs one or two. */
const maxRounds = 64;

/**
 * A table's rows counted per principal (DESIGN, "Fair shares"), for a store shared by principals:
 * each principal keeps up to its share, past which its own oldest go; past the cap, the oldest of
 * the principal that holds the most go, never another's while one holds more. The counts are kept
 * by triggers (schema.ts), so a trim is a few index lookups and the rows it removes.
 */
export class FairShare {
	readonly #db: DatabaseSync;
	readonly #store: string;

	constructor(db: DatabaseSync, rows: CountedRows) {
		this.#db = db;
		this.#store = rows.store;
		db.exec(fairShareTables);
		const known = db
			.prepare("SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = ?")
			.get(`fair1_${rows.store}_insert`);
		if (known) return;
		// New triggers (an older gateway.db, or a table made again): the counts start from the rows there.
		migrate(db, `fair_counts.${rows.store}`, () => {
			db.exec(fairShareTriggers(rows));
			db.exec(fairShareRecount(rows));
		});
	}

	/** How many counted rows `principal` holds in `scope`. */
	holds(scope: string, principal: string): number {
		const row = this.#db
			.prepare("SELECT n FROM fair_counts WHERE store = ? AND scope = ? AND principal = ?")
			.get(this.#store, scope, principal) as { n: number } | undefined;
		return row?.n ?? 0;
	}

	total(scope: string): number {
		const row = this.#db.prepare("SELECT n FROM fair_totals WHERE store = ? AND scope = ?").get(this.#store, scope) as
			| { n: number }
			| undefined;
		return row?.n ?? 0;
	}

	/**
	 * Brings `scope` back within the rule after a write: `principal` (the writer, when known) down to
	 * `share`, then whoever holds the most down to `share`, then while the scope is past `max`, the
	 * principal holding the most gives up its oldest. `evict(principal, n)` removes up to n of that
	 * principal's oldest evictable rows and says how many went (0: none it may lose, so stop).
	 */
	trim(scope: string, share: number, max: number, evict: (principal: string, n: number) => number, principal?: string) {
		if (principal !== undefined) {
			const over = this.holds(scope, principal) - shareFor(principal, share, max);
			if (over > 0) evict(principal, over);
		}
		for (let round = 0; round < maxRounds; round++) {
			const [top, next] = this.#db
				.prepare(
					"SELECT principal, n FROM fair_counts WHERE store = ? AND scope = ? ORDER BY n DESC, principal DESC LIMIT 2",
				)
				.all(this.#store, scope) as { principal: string; n: number }[];
			if (!top) return;
			const overShare = top.n - shareFor(top.principal, share, max);
			const overMax = this.total(scope) - max;
			if (overShare <= 0 && overMax <= 0) return;
			// Past the cap, the top holder goes down to the next one's count at most: then that one holds the most.
			const n = Math.max(overShare, Math.min(overMax, Math.max(1, top.n - (next?.n ?? 0))));
			if (evict(top.principal, n) === 0) return;
		}
	}
}
