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
 * A key as stored: the caller's own. Two principals may pick the same Idempotency-Key (a UUID
 * library seeded alike, a guessed or leaked key); each gets the answer to their own request only.
 */
export interface ScopedKey {
	principal: string;
	key: string;
}

/**
 * What the middleware needs of a key store, declared beside it so the middleware depends on no
 * database: SQLite's (one node, src/store/sqlite/idempotency.ts) answers at once, PostgreSQL's
 * (cluster mode, src/store/postgres/idempotency.ts) later; server.ts picks one. `claim` must be
 * atomic: of two requests with one key, on any nodes, exactly one gets true. Both keep fair shares
 * (DESIGN, "Fair shares"): a principal's claims past its share evict its own oldest finished keys,
 * and past the cap the principal that holds the most loses its oldest, so no principal's keys can
 * push out another's (whose retry would then run twice).
 */
export interface IdempotencyKeys {
	readonly open: boolean;
	get(key: ScopedKey): Awaitable<KeyRecord | undefined>;
	claim(key: ScopedKey, fingerprint: string): Awaitable<boolean>;
	finish(key: ScopedKey, answer: StoredAnswer): Awaitable<void>;
	forget(key: ScopedKey): Awaitable<void>;
}
