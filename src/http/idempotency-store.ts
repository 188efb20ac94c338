import type { DatabaseSync } from "node:sqlite";

/** A stored first answer: what a retry with the same key gets back. */
export interface StoredAnswer {
	status: number;
	headers: Record<string, string>;
	/** null when the answer was too large to keep. */
	body: string | null;
}

export type KeyRecord =
	| { state: "running"; fingerprint: string; createdAt: number }
	| { state: "done"; fingerprint: string; createdAt: number; answer: StoredAnswer };

type Awaitable<T> = T | Promise<T>;

/**
 * What the middleware needs of a key store: SQLite's (one node) answers at once, PostgreSQL's
 * (cluster mode, postgres-idempotency-store.ts) later. `claim` must be atomic: of two requests
 * with one key, on any nodes, exactly one gets true.
 */
export interface IdempotencyKeys {
	readonly open: boolean;
	get(key: string): Awaitable<KeyRecord | undefined>;
	claim(key: string, fingerprint: string): Awaitable<boolean>;
	finish(key: string, answer: StoredAnswer): Awaitable<void>;
	forget(key: string): Awaitable<void>;
}

const schema = `
CREATE TABLE IF NOT EXISTS idempotency_keys (
	key TEXT PRIMARY KEY,
	fingerprint TEXT NOT NULL,
	state TEXT NOT NULL,
	answer TEXT,
	created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS idempotency_keys_age ON idempotency_keys (created_at);`;

/**
 * Idempotency keys in gateway.db (own table). A key left `running` by a previous process belonged
 * to a request that died with it (and with its pi): it is forgotten at start, so a retry runs.
 */
export class IdempotencyStore implements IdempotencyKeys {
	readonly #db: DatabaseSync;
	readonly #ttlMs: number;
	readonly #maxKeys: number;

	constructor(db: DatabaseSync, ttlMs: number, maxKeys: number) {
		this.#db = db;
		this.#ttlMs = ttlMs;
		this.#maxKeys = maxKeys;
		db.exec(schema);
		db.prepare("DELETE FROM idempotency_keys WHERE state = 'running'").run();
		this.prune();
	}

	get open(): boolean {
		return this.#db.isOpen;
	}

	/** The key's record within the window; an expired one is forgotten. */
	get(key: string): KeyRecord | undefined {
		const row = this.#db.prepare("SELECT * FROM idempotency_keys WHERE key = ?").get(key) as
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
	claim(key: string, fingerprint: string): boolean {
		const result = this.#db
			.prepare(
				"INSERT OR IGNORE INTO idempotency_keys (key, fingerprint, state, answer, created_at) VALUES (?, ?, 'running', NULL, ?)",
			)
			.run(key, fingerprint, Date.now());
		return result.changes === 1;
	}

	finish(key: string, answer: StoredAnswer): void {
		this.#db
			.prepare("UPDATE idempotency_keys SET state = 'done', answer = ? WHERE key = ?")
			.run(JSON.stringify(answer), key);
		this.prune();
	}

	forget(key: string): void {
		this.#db.prepare("DELETE FROM idempotency_keys WHERE key = ?").run(key);
	}

	/** Keys past the window go, and past maxKeys the oldest finished ones. */
	prune(): void {
		this.#db.prepare("DELETE FROM idempotency_keys WHERE created_at < ?").run(Date.now() - this.#ttlMs);
		this.#db
			.prepare(
				`DELETE FROM idempotency_keys WHERE state = 'done' AND key IN (
					SELECT key FROM idempotency_keys WHERE state = 'done' ORDER BY created_at DESC LIMIT -1 OFFSET ?)`,
			)
			.run(this.#maxKeys);
	}
}
