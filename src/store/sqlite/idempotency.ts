import type { DatabaseSync } from "node:sqlite";
import { shareOf } from "../../config/config.ts";
import type { IdempotencyKeys, KeyRecord, ScopedKey, StoredAnswer } from "../../http/idempotency/key-store.ts";
import { storedOr507 } from "../storage-full.ts";
import { FairShare } from "./fair-share.ts";
import { migrate } from "./migrations.ts";
import { idempotencyTable } from "./schema.ts";

/**
 * A gateway.db from before keys were scoped has a table keyed by the key alone. Its rows name no
 * principal, so nobody can be given them safely: the table is dropped (at worst, a retry of a
 * request sent before the upgrade runs again, as it would after the 24 h window).
 */
function dropUnscopedTable(db: DatabaseSync): void {
	const columns = db.prepare("SELECT name FROM pragma_table_info('idempotency_keys')").all() as { name: string }[];
	if (columns.length > 0 && !columns.some((c) => c.name === "principal"))
		migrate(db, "idempotency_keys.scoped", () => db.exec("DROP TABLE idempotency_keys"));
}

/** A JSON pair, not a joined string: no principal/key split can collide with another. */
const idOf = (key: ScopedKey) => JSON.stringify([key.principal, key.key]);
const isSqliteError = (error: unknown) => (error as { code?: unknown }).code === "ERR_SQLITE_ERROR";

/**
 * Idempotency keys in gateway.db (own table). A key left `running` by a previous process belonged
 * to a request that died with it (and with its pi): it is forgotten at start, so a retry runs.
 *
 * Fair shares: each principal keeps up to `share` keys, past which its own oldest finished key goes;
 * past `maxKeys` the oldest finished key of the principal that holds the most goes. So no principal's
 * flood of keys evicts another's (whose retry would then run twice). A running key is never evicted.
 *
 * A full disk: a claim that cannot be written is 507 and the request does not run. Once the request
 * ran, its answer is the client's whatever the disk says: a finish or forget that fails is kept
 * here (and read back from here) and written before the next claim, which is refused while it fails.
 */
export class IdempotencyStore implements IdempotencyKeys {
	readonly #db: DatabaseSync;
	readonly #ttlMs: number;
	readonly #maxKeys: number;
	readonly #share: number;
	readonly #counts: FairShare;
	/** Writes the disk did not take, by key, with the record they leave (undefined: forgotten). */
	readonly #unwritten = new Map<string, { record: KeyRecord | undefined; write: () => void }>();

	constructor(db: DatabaseSync, ttlMs: number, maxKeys: number, share = shareOf(maxKeys)) {
		this.#db = db;
		this.#ttlMs = ttlMs;
		this.#maxKeys = maxKeys;
		this.#share = share;
		dropUnscopedTable(db);
		db.exec(idempotencyTable);
		this.#counts = new FairShare(db, {
			store: "idempotency",
			table: "idempotency_keys",
			scope: () => "''",
			counted: () => "1",
		});
		db.prepare("DELETE FROM idempotency_keys WHERE state = 'running'").run();
		this.prune();
	}

	get open(): boolean {
		return this.#db.isOpen;
	}

	/** The key's record within the window; an expired one is forgotten. */
	get(key: ScopedKey): KeyRecord | undefined {
		const pending = this.#unwritten.get(idOf(key));
		if (pending) return pending.record;
		const row = this.#db
			.prepare("SELECT * FROM idempotency_keys WHERE principal = ? AND key = ?")
			.get(key.principal, key.key) as
			| { fingerprint: string; state: string; answer: string | null; created_at: number }
			| undefined;
		if (!row) return undefined;
		if (row.created_at < Date.now() - this.#ttlMs) {
			this.forget(key);
			return undefined;
		}
		if (row.state === "running") return { state: "running", fingerprint: row.fingerprint, createdAt: row.created_at };
		return {
			state: "done",
			fingerprint: row.fingerprint,
			createdAt: row.created_at,
			answer: JSON.parse(row.answer as string) as StoredAnswer,
		};
	}

	/** Claims the key for a first request; false when someone holds it already. */
	claim(key: ScopedKey, fingerprint: string): boolean {
		return storedOr507("The Idempotency-Key was not stored, so the request did not run", () => {
			for (const [id, { write }] of this.#unwritten) {
				write();
				this.#unwritten.delete(id);
			}
			const result = this.#db
				.prepare(
					"INSERT OR IGNORE INTO idempotency_keys (principal, key, fingerprint, state, answer, created_at) VALUES (?, ?, ?, 'running', NULL, ?)",
				)
				.run(key.principal, key.key, fingerprint, Date.now());
			if (result.changes !== 1) return false;
			this.#trim(key.principal);
			return true;
		});
	}

	finish(key: ScopedKey, answer: StoredAnswer): void {
		const claimed = this.get(key);
		const record = claimed && { ...claimed, state: "done" as const, answer };
		this.#attempt(key, record, () =>
			this.#db
				.prepare("UPDATE idempotency_keys SET state = 'done', answer = ? WHERE principal = ? AND key = ?")
				.run(JSON.stringify(answer), key.principal, key.key),
		);
		try {
			this.prune();
		} catch (error) {
			if (!isSqliteError(error)) throw error;
		}
	}

	forget(key: ScopedKey): void {
		this.#attempt(key, undefined, () =>
			this.#db.prepare("DELETE FROM idempotency_keys WHERE principal = ? AND key = ?").run(key.principal, key.key),
		);
	}

	/** Writes now, or keeps the write (and what it leaves) for the next claim when the disk refuses it. */
	#attempt(key: ScopedKey, record: KeyRecord | undefined, write: () => void): void {
		const id = idOf(key);
		try {
			write();
			this.#unwritten.delete(id);
		} catch (error) {
			if (!isSqliteError(error)) throw error;
			this.#unwritten.set(id, { record, write });
		}
	}

	/** Keys past the window go (by the age index: only what goes is read). */
	prune(): void {
		this.#db.prepare("DELETE FROM idempotency_keys WHERE created_at < ?").run(Date.now() - this.#ttlMs);
	}

	/** After `principal` took a key: its share, then the cap (fair-share.ts). A trim the disk refuses waits for the next claim. */
	#trim(principal: string): void {
		const evict = this.#db.prepare(
			`DELETE FROM idempotency_keys WHERE rowid IN (
				SELECT rowid FROM idempotency_keys WHERE principal = ? AND state = 'done' ORDER BY created_at, rowid LIMIT ?)`,
		);
		try {
			this.#counts.trim("", this.#share, this.#maxKeys, (holder, n) => Number(evict.run(holder, n).changes), principal);
		} catch (error) {
			if (!isSqliteError(error)) throw error;
		}
	}
}
