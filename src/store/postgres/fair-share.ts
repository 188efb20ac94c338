import type pg from "pg";
import { shareFor } from "../../config/config.ts";
import { transaction } from "./schema.ts";

/** Rounds of eviction one trim does at most; each removes at least one row. */
const maxRounds = 64;

/**
 * A cluster-wide table shared by principals, counted per principal by triggers (migrations 12, 13):
 * `store` names its counts, `evict` is SQL that removes up to $2 of principal $1's oldest evictable
 * rows (through an index on (principal, age)).
 */
export interface SharedTable {
	store: "idempotency" | "audit" | "approval_history";
	evict: string;
}

/**
 * Fair shares in cluster mode, as ../sqlite/fair-share.ts on one node: `principal` (who just wrote)
 * down to `share`, then while the table is past `max` the principal that holds the most gives up its
 * oldest, never another's while one holds more. One lookup when nothing is over; past the cap, the
 * nodes trim one at a time (the total's row locked), so two nodes never both evict for one row.
 */
export async function trimShares(
	pool: pg.Pool,
	table: SharedTable,
	principal: string,
	share: number,
	max: number,
): Promise<void> {
	const { rows } = await pool.query<{ mine: string | null; total: string | null }>(
		`SELECT (SELECT n FROM fair_counts WHERE store = $1 AND principal = $2) AS mine,
		        (SELECT n FROM fair_totals WHERE store = $1) AS total`,
		[table.store, principal],
	);
	const mine = Number(rows[0]?.mine ?? 0);
	const own = shareFor(principal, share, max);
	if (mine > own) await pool.query(table.evict, [principal, mine - own]);
	if (Number(rows[0]?.total ?? 0) <= max) return;
	await transaction(pool, async (client) => {
		for (let round = 0; round < maxRounds; round++) {
			const total = await client.query<{ n: string }>("SELECT n FROM fair_totals WHERE store = $1 FOR UPDATE", [
				table.store,
			]);
			const over = Number(total.rows[0]?.n ?? 0) - max;
			if (over <= 0) return;
			const most = await client.query<{ principal: string; n: string }>(
				"SELECT principal, n FROM fair_counts WHERE store = $1 ORDER BY n DESC, principal DESC LIMIT 2",
				[table.store],
			);
			const [top, next] = most.rows;
			if (!top) return;
			// The top holder goes down to the next one's count at most: then that one holds the most.
			const n = Math.min(over, Math.max(1, Number(top.n) - Number(next?.n ?? 0)));
			const { rowCount } = await client.query(table.evict, [top.principal, n]);
			if (!rowCount) return;
		}
	});
}
