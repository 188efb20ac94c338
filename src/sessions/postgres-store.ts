import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import type { DatabaseSync } from "node:sqlite";
import pg from "pg";
import { parseStoredRecord, tombstoneMs } from "./records.ts";
import type { SessionStore, StoredSession, StoreEvents, Tombstone } from "./session-store.ts";
import { SqliteStore } from "./sqlite-store.ts";

/**
 * The session registry in PostgreSQL (`--database-url`), the ground of cluster mode.
 *
 * Client: `pg` (node-postgres), not `postgres` (porsager): it is the client most operators
 * already run and debug, pure JavaScript (no native addon), and its Pool reports a lost server
 * as an 'error' event we can turn into the store's fail-soft health instead of a crash.
 *
 * The SessionStore interface is synchronous (the journal saves from event handlers and timers)
 * and PostgreSQL is not. Rather than make every caller async, this store reads everything it
 * will need at connect() (sessions, tombstones, the clean flag) and writes behind: every write
 * goes onto one ordered queue, a failed write is kept by key (the latest write of a key
 * replacing an older one) and replayed by retry(), exactly the fail-soft contract of SqliteStore.
 * Reads between writes come from memory, which is right while one node owns the database; the
 * multi-node slice replaces tombstone() and restore() with leases and reads (see README).
 *
 * Webhooks, Idempotency-Key answers, approval history and session policies still keep their
 * tables in the node's own gateway.db (`local`), which also keeps one gateway per data dir.
 */
export class PostgresStore implements SessionStore {
	readonly #pool: pg.Pool;
	readonly #local: SqliteStore;
	#events: StoreEvents = {};
	readonly #records: { id: string; record: string }[];
	readonly #gone = new Map<string, Tombstone>();
	readonly #pending = new Map<string, () => Promise<unknown>>();
	#queue: Promise<void> = Promise.resolve();
	#writable = true;
	#closed: Promise<void> | undefined;
	readonly previousRunClean: boolean;
	readonly detached = false;

	private constructor(pool: pg.Pool, local: SqliteStore, loaded: Loaded) {
		this.#pool = pool;
		this.#local = local;
		this.#records = loaded.records;
		for (const t of loaded.gone) this.#gone.set(t.id, t);
		this.previousRunClean = loaded.clean;
	}

	/**
	 * Connects, migrates the schema, reads what restore() and tombstone() will need, and marks the
	 * run unclean until close(). Throws (the gateway does not start) when the server is not there.
	 */
	static async connect(url: string, dataDir: string): Promise<PostgresStore> {
		const pool = new pg.Pool({ connectionString: url, max: 4, connectionTimeoutMillis: 5000 });
		// An idle client losing its server must not crash the process: the next write fails soft.
		pool.on("error", () => {});
		try {
			await migrate(pool);
			const loaded = await load(pool);
			await pool.query(
				"INSERT INTO meta (key, value) VALUES ('clean', '0') ON CONFLICT (key) DO UPDATE SET value = '0'",
			);
			const local = new SqliteStore(dataDir);
			return new PostgresStore(pool, local, loaded);
		} catch (error) {
			await pool.end().catch(() => {});
			throw new Error(`Cannot use the database ${redact(url)}: ${(error as Error).message}`);
		}
	}

	/** The journal's events (the registry opens the store through an OpenStore function). */
	attach(events: StoreEvents): this {
		this.#events = events;
		return this;
	}

	/** The node's own SQLite, for the tables that are not in PostgreSQL yet. */
	get database(): DatabaseSync {
		return this.#local.database;
	}

	get writable(): boolean {
		return this.#writable;
	}

	/** Resolves when every write queued so far has been tried (tests, shutdown). */
	async settled(): Promise<void> {
		let queue: Promise<void>;
		do {
			queue = this.#queue;
			await queue;
		} while (queue !== this.#queue);
	}

	#write(key: string, op: () => Promise<unknown>): boolean {
		this.#pending.set(key, op);
		this.#enqueue(key, op);
		return this.#writable;
	}

	#enqueue(key: string, op: () => Promise<unknown>): void {
		this.#queue = this.#queue.then(async () => {
			// A newer write of the same key replaced this one: it runs in its own turn.
			if (this.#pending.get(key) !== op) return;
			try {
				await op();
			} catch (error) {
				this.#writable = false;
				this.#events.writeFailed?.(error as Error);
				return;
			}
			if (this.#pending.get(key) === op) this.#pending.delete(key);
			if (!this.#writable && this.#pending.size === 0) {
				this.#writable = true;
				this.#events.writable?.();
			}
		});
	}

	restore(): StoredSession[] {
		const records: StoredSession[] = [];
		for (const raw of this.#records) {
			const parsed = parseStoredRecord(raw);
			if ("skip" in parsed) this.#events.skipped?.(parsed.id, parsed.skip);
			else records.push(parsed.record);
		}
		const now = new Date();
		for (const record of records.filter((r) => !r.persist)) this.bury(record.id, "restart", now);
		const cutoff = new Date(now.getTime() - tombstoneMs);
		for (const [id, t] of this.#gone) if (new Date(t.at) < cutoff) this.#gone.delete(id);
		this.#write("gc", () => this.#pool.query("DELETE FROM gone WHERE at < $1", [cutoff]));
		return records.filter((r) => r.persist).sort((a, b) => a.createdAt.localeCompare(b.createdAt));
	}

	save(record: StoredSession): boolean {
		const text = JSON.stringify(record);
		return this.#write(`session:${record.id}`, () =>
			this.#pool.query(
				"INSERT INTO sessions (id, record, updated_at) VALUES ($1, $2, now()) ON CONFLICT (id) DO UPDATE SET record = EXCLUDED.record, updated_at = now()",
				[record.id, text],
			),
		);
	}

	remove(id: string): void {
		this.#pending.delete(`session:${id}`);
		this.#pending.delete(`file:${id}`);
		this.#write(`remove:${id}`, () =>
			this.#pool.query("WITH f AS (DELETE FROM conversations WHERE id = $1) DELETE FROM sessions WHERE id = $1", [id]),
		);
	}

	bury(id: string, reason: Tombstone["reason"], at = new Date()): void {
		this.#pending.delete(`session:${id}`);
		this.#pending.delete(`file:${id}`);
		this.#gone.set(id, { id, reason, at: at.toISOString() });
		this.#write(`remove:${id}`, async () => {
			const client = await this.#pool.connect();
			try {
				await client.query("BEGIN");
				await client.query("DELETE FROM sessions WHERE id = $1", [id]);
				await client.query("DELETE FROM conversations WHERE id = $1", [id]);
				await client.query(
					"INSERT INTO gone (id, reason, at) VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE SET reason = EXCLUDED.reason, at = EXCLUDED.at",
					[id, reason, at],
				);
				await client.query("COMMIT");
			} catch (error) {
				await client.query("ROLLBACK").catch(() => {});
				throw error;
			} finally {
				client.release();
			}
		});
	}

	saveConversation(id: string, file: string): void {
		this.#write(`file:${id}`, async () => {
			let content: Buffer;
			try {
				content = await readFile(file);
			} catch {
				return; // pi has written nothing yet, or the session was deleted meanwhile
			}
			await this.#pool.query(
				"INSERT INTO conversations (id, file, content, updated_at) VALUES ($1, $2, $3, now()) ON CONFLICT (id) DO UPDATE SET file = EXCLUDED.file, content = EXCLUDED.content, updated_at = now()",
				[id, file, content],
			);
		});
	}

	async restoreConversation(id: string, file: string): Promise<boolean> {
		// Any write still queued for it goes first (a copy saved a moment ago).
		await this.settled();
		const { rows } = await this.#pool.query<{ content: Buffer }>("SELECT content FROM conversations WHERE id = $1", [
			id,
		]);
		const content = rows[0]?.content;
		if (!content) return false;
		await mkdir(dirname(file), { recursive: true });
		await writeFile(file, content, { mode: 0o600 });
		return true;
	}

	tombstone(id: string): Tombstone | undefined {
		return this.#gone.get(id);
	}

	/** Replays the writes that failed, in order; with none, probes whether the server answers again. */
	retry(): void {
		if (this.#closed) return;
		if (this.#pending.size === 0) {
			if (!this.#writable) this.#write("probe", () => this.#pool.query("SELECT 1"));
			return;
		}
		for (const [key, op] of this.#pending) this.#enqueue(key, op);
	}

	/** Waits for the queued writes, marks the run clean when all of them passed, and ends the pool. */
	close(): Promise<void> {
		this.#closed ??= (async () => {
			await this.settled();
			if (this.#pending.size === 0) {
				await this.#pool.query("UPDATE meta SET value = '1' WHERE key = 'clean'").catch(() => {});
			}
			await this.#pool.end().catch(() => {});
			this.#local.close();
		})();
		return this.#closed;
	}
}

interface Loaded {
	records: { id: string; record: string }[];
	gone: Tombstone[];
	clean: boolean;
}

async function load(pool: pg.Pool): Promise<Loaded> {
	const sessions = await pool.query<{ id: string; record: string }>("SELECT id, record FROM sessions");
	const gone = await pool.query<{ id: string; reason: Tombstone["reason"]; at: Date }>(
		"SELECT id, reason, at FROM gone WHERE at >= $1",
		[new Date(Date.now() - tombstoneMs)],
	);
	const clean = await pool.query<{ value: string }>("SELECT value FROM meta WHERE key = 'clean'");
	return {
		records: sessions.rows,
		gone: gone.rows.map((r) => ({ id: r.id, reason: r.reason, at: r.at.toISOString() })),
		clean: clean.rows.length === 0 || clean.rows[0]?.value === "1",
	};
}

/**
 * Versioned migrations, applied by the gateway itself in order. Each runs once, recorded in
 * pi_gateway_migrations; append new ones, never edit a released one. The record column is text,
 * not jsonb, so a row reads back byte for byte what was written (and an unreadable one is
 * reported like in SQLite instead of being refused by the server).
 */
export const migrations: { version: number; name: string; sql: string }[] = [
	{
		version: 1,
		name: "sessions, tombstones, meta",
		sql: `
CREATE TABLE sessions (id text PRIMARY KEY, record text NOT NULL, updated_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE gone (id text PRIMARY KEY, reason text NOT NULL, at timestamptz NOT NULL);
CREATE INDEX gone_at ON gone (at);
CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL);`,
	},
	{
		version: 2,
		name: "conversations: pi's session files",
		sql: "CREATE TABLE conversations (id text PRIMARY KEY, file text NOT NULL, content bytea NOT NULL, updated_at timestamptz NOT NULL DEFAULT now());",
	},
];

/** An arbitrary constant: the advisory lock every node takes while it migrates. */
const migrationLock = 0x70_69_67_77; // "pigw"

/**
 * Applies the missing migrations in one transaction under an advisory lock, so nodes that start
 * at once migrate one after the other: the first does the work, the others find it done.
 */
export async function migrate(pool: pg.Pool): Promise<number[]> {
	const client = await pool.connect();
	try {
		await client.query("BEGIN");
		await client.query("SELECT pg_advisory_xact_lock($1)", [migrationLock]);
		await client.query(
			"CREATE TABLE IF NOT EXISTS pi_gateway_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
		);
		const { rows } = await client.query<{ version: number }>("SELECT version FROM pi_gateway_migrations");
		const done = new Set(rows.map((r) => r.version));
		const applied: number[] = [];
		for (const m of migrations) {
			if (done.has(m.version)) continue;
			await client.query(m.sql);
			await client.query("INSERT INTO pi_gateway_migrations (version, name) VALUES ($1, $2)", [m.version, m.name]);
			applied.push(m.version);
		}
		await client.query("COMMIT");
		return applied;
	} catch (error) {
		await client.query("ROLLBACK").catch(() => {});
		throw error;
	} finally {
		client.release();
	}
}

/** The URL without its password, for messages and logs. */
export function redact(url: string): string {
	try {
		const u = new URL(url);
		if (u.password) u.password = "***";
		return u.toString();
	} catch {
		return "(an unparsable URL)";
	}
}
