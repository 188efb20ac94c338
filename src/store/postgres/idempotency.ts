import type pg from "pg";
import type { Logger } from "pino";
import { shareOf } from "../../config/config.ts";
import type { IdempotencyKeys, KeyRecord, ScopedKey, StoredAnswer } from "../../http/idempotency/key-store.ts";
import { type SharedTable, trimShares } from "./fair-share.ts";
import { needDatabase } from "./schema.ts";

/** How often old keys are pruned and failed writes tried again. */
const tickMs = 10_000;

/** SQL: the node that claimed row `k` still holds its lease (else its request died with it). */
const claimerAlive = "EXISTS (SELECT 1 FROM nodes n WHERE n.id = k.node AND n.lease_until > now())";

/** The table's fair shares (fair-share.ts): only a finished key is evicted, the oldest of its principal first. */
const keysTable: SharedTable = {
	store: "idempotency",
	evict: `DELETE FROM idempotency_keys WHERE (principal, key) IN (
		SELECT principal, key FROM idempotency_keys WHERE principal = $1 AND state = 'done' ORDER BY created_at LIMIT $2)`,
};

/** A JSON pair, not a joined string: no principal/key split can collide with another. */
const unwrittenId = (principal: string, key: string) => JSON.stringify([principal, key]);

/**
 * Idempotency keys in PostgreSQL (cluster mode): one table for every node, so a retry that the load
 * balancer sends to another node gets the first answer, or 409 while the first request runs. The
 * first claim wins (one INSERT … ON CONFLICT), with the same semantics as IdempotencyStore. A key
 * left `running` by a node whose lease ran out belonged to a request that died with that node (and
 * its pi): it counts as absent, so a retry runs. Times are the database's, the same for every node.
 * Fair shares as in SQLite: a principal's claim past its `share` evicts its own oldest finished
 * key, and past `maxKeys` the principal that holds the most gives up its oldest.
 */
export class PostgresIdempotencyStore implements IdempotencyKeys {
	readonly #pool: pg.Pool;
	readonly #node: string;
	readonly #ttlSeconds: number;
	readonly #maxKeys: number;
	readonly #share: number;
	readonly #logger: Logger;
	/** Writes after the handler ran, kept by principal and key when the database did not take them, and tried again. */
	readonly #unwritten = new Map<string, () => Promise<unknown>>();
	readonly #timer: NodeJS.Timeout;

	private constructor(pool: pg.Pool, node: string, ttlMs: number, maxKeys: number, logger: Logger, share: number) {
		this.#pool = pool;
		this.#node = node;
		this.#ttlSeconds = ttlMs / 1000;
		this.#maxKeys = maxKeys;
		this.#share = share;
		this.#logger = logger;
		this.#timer = setInterval(() => void this.#tick(), tickMs).unref();
	}

	/** Forgets what this node (by its name) claimed in an earlier life: those requests died with it. */
	static async open(pool: pg.Pool, node: string, ttlMs: number, maxKeys: number, logger: Logger, share?: number) {
		await pool.query("DELETE FROM idempotency_keys WHERE node = $1 AND state = 'running'", [node]);
		const store = new PostgresIdempotencyStore(pool, node, ttlMs, maxKeys, logger, share ?? shareOf(maxKeys));
		await store.#prune();
		return store;
	}

	/** The pool ends when the node stops (the session store closes it). */
	get open(): boolean {
		return !this.#pool.ended;
	}

	async get({ principal, key }: ScopedKey): Promise<KeyRecord | undefined> {
		const { rows } = await this.#ask(() =>
			this.#pool.query<{ fingerprint: string; state: string; answer: string | null; created_ms: number }>(
				`SELECT fingerprint, state, answer, (extract(epoch FROM created_at) * 1000)::float8 AS created_ms
				 FROM idempotency_keys k WHERE principal = $3 AND key = $1 AND created_at > now() - make_interval(secs => $2)
				 AND (state = 'done' OR ${claimerAlive})`,
				[key, this.#ttlSeconds, principal],
			),
		);
		const row = rows[0];
		if (!row) return undefined;
		const base = { fingerprint: row.fingerprint, createdAt: row.created_ms };
		if (row.state === "running") return { state: "running", ...base };
		return { state: "done", ...base, answer: JSON.parse(row.answer as string) as StoredAnswer };
	}

	/** Inserts the key, or takes over one that expired or whose node died; false when it is held. */
	async claim({ principal, key }: ScopedKey, fingerprint: string): Promise<boolean> {
		const { rowCount } = await this.#ask(() =>
			this.#pool.query(
				`INSERT INTO idempotency_keys AS k (principal, key, fingerprint, state, node) VALUES ($5, $1, $2, 'running', $3)
				 ON CONFLICT (principal, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, state = 'running', answer = NULL,
				   node = EXCLUDED.node, created_at = now()
				 WHERE k.created_at <= now() - make_interval(secs => $4) OR (k.state = 'running' AND NOT ${claimerAlive})`,
				[key, fingerprint, this.#node, this.#ttlSeconds, principal],
			),
		);
		if (rowCount !== 1) return false;
		// The key is taken: a trim the database does not answer now is done by a later claim.
		await trimShares(this.#pool, keysTable, principal, this.#share, this.#maxKeys).catch((error) =>
			this.#logger.warn({ err: error }, "idempotency: keys not trimmed; a later claim will"),
		);
		return true;
	}

	/** Never throws: the work is done by now; a lost write is tried again (a retry meanwhile gets 409). */
	finish({ principal, key }: ScopedKey, answer: StoredAnswer): Promise<void> {
		return this.#write(unwrittenId(principal, key), () =>
			this.#pool.query(
				"UPDATE idempotency_keys SET state = 'done', answer = $2 WHERE principal = $4 AND key = $1 AND node = $3 AND state = 'running'",
				[key, JSON.stringify(answer), this.#node, principal],
			),
		);
	}

	forget({ principal, key }: ScopedKey): Promise<void> {
		return this.#write(unwrittenId(principal, key), () =>
			this.#pool.query(
				"DELETE FROM idempotency_keys WHERE principal = $3 AND key = $1 AND node = $2 AND state = 'running'",
				[key, this.#node, principal],
			),
		);
	}

	/** Before the request runs: a database out of reach is a 503 to retry (nothing started). */
	#ask<T>(query: () => Promise<T>): Promise<T> {
		return needDatabase("The Idempotency-Key cannot be checked", query);
	}

	async #write(id: string, op: () => Promise<unknown>): Promise<void> {
		this.#unwritten.set(id, op);
		try {
			await op();
			if (this.#unwritten.get(id) === op) this.#unwritten.delete(id);
		} catch (error) {
			if (this.open) this.#logger.warn({ err: error, key: id }, "idempotency: key not written; trying again");
		}
	}

	async #tick(): Promise<void> {
		if (!this.open) {
			clearInterval(this.#timer);
			return;
		}
		for (const [id, op] of this.#unwritten) await this.#write(id, op);
		await this.#prune().catch(() => {});
	}

	/** Keys past the window go (the caps are kept at each claim). */
	async #prune(): Promise<void> {
		await this.#pool.query("DELETE FROM idempotency_keys WHERE created_at <= now() - make_interval(secs => $1)", [
			this.#ttlSeconds,
		]);
	}
}
