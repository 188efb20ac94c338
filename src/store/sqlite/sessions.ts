import { mkdirSync, statSync } from "node:fs";
import { join } from "node:path";
import type { DatabaseSync } from "node:sqlite";
import type { OpenStore, SessionStore, StoredSession, StoreEvents, Tombstone } from "../../sessions/registry/index.ts";
import { parseStoredRecord, tombstoneMs } from "../../sessions/registry/index.ts";
import { loadSqlite } from "./driver.ts";
import { registryTables } from "./schema.ts";

/**
 * The session registry on disk: one SQLite file (Node's built-in driver, no native addon) in the
 * data directory. The connection holds an exclusive lock, so a second gateway on the same data
 * directory fails at startup instead of resuming the same pi sessions twice.
 */
export class SqliteStore implements SessionStore {
	readonly #db: DatabaseSync;
	readonly #upsert;
	readonly #remove;
	readonly #path: string;
	readonly #ino: number;
	readonly #events: StoreEvents;
	/**
	 * Writes that failed (a full disk), by key, in order: retried on every retry() until they
	 * pass, the latest write of a key replacing an older one.
	 */
	readonly #pending = new Map<string, () => void>();
	#writable = true;
	/** False when the previous gateway did not shut down cleanly (killed, crashed, power loss). */
	readonly previousRunClean: boolean;

	constructor(dataDir: string, events: StoreEvents = {}) {
		mkdirSync(dataDir, { recursive: true });
		const { DatabaseSync } = loadSqlite();
		const path = join(dataDir, "gateway.db");
		this.#path = path;
		this.#events = events;
		this.#db = new DatabaseSync(path);
		try {
			this.#db.exec("PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;");
			// The first write takes the lock, and EXCLUSIVE mode keeps it until the connection closes.
			this.#db.exec(`BEGIN IMMEDIATE; ${registryTables} COMMIT;`);
		} catch (error) {
			this.#db.close();
			const busy = /locked|busy/i.test((error as Error).message);
			throw new Error(
				busy
					? `The data directory ${dataDir} is in use by another pi-gateway (${path} is locked)`
					: `Cannot open ${path}: ${(error as Error).message}`,
			);
		}
		const clean = this.#db.prepare("SELECT value FROM meta WHERE key = 'clean'").get() as { value: string } | undefined;
		this.previousRunClean = clean === undefined || clean.value === "1";
		this.#write("clean", () =>
			this.#db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('clean', '0')").run(),
		);
		this.#upsert = this.#db.prepare("INSERT OR REPLACE INTO sessions (id, record) VALUES (?, ?)");
		this.#remove = this.#db.prepare("DELETE FROM sessions WHERE id = ?");
		this.#ino = statSync(path).ino;
	}

	/** False while writes fail (disk full, read-only); true again once one passes. */
	get writable(): boolean {
		return this.#writable;
	}

	/** The file was deleted or replaced under the open connection: writes would go to a ghost. */
	get detached(): boolean {
		try {
			return statSync(this.#path).ino !== this.#ino;
		} catch {
			return true;
		}
	}

	/**
	 * Every write fails soft: a failure (SQLITE_FULL, an I/O error) is reported once, the write is
	 * kept for retry(), and the gateway goes on from memory.
	 */
	#write(key: string, op: () => void): boolean {
		this.#pending.delete(key);
		try {
			op();
		} catch (error) {
			this.#pending.set(key, op);
			this.#failed(error as Error);
			return false;
		}
		// A delete passes on a full disk; writable again means nothing is left waiting.
		if (this.#pending.size === 0) this.#succeeded();
		return true;
	}

	#failed(error: Error): void {
		this.#writable = false;
		this.#events.writeFailed?.(error);
	}

	#succeeded(): void {
		if (this.#writable) return;
		this.#writable = true;
		this.#events.writable?.();
	}

	/** Retries the writes that failed, in order; with none, probes whether writing works again. */
	retry(): void {
		if (this.#writable && this.#pending.size === 0) return;
		const probe = () => {
			this.#db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('probe', ?)").run(new Date().toISOString());
		};
		for (const [key, op] of [...this.#pending, ...(this.#pending.size === 0 ? [["probe", probe] as const] : [])]) {
			try {
				op();
				this.#pending.delete(key);
			} catch (error) {
				this.#failed(error as Error);
				return;
			}
		}
		this.#succeeded();
	}

	/** The connection itself: a test hook (a full disk is simulated with PRAGMA max_page_count). */
	get database(): DatabaseSync {
		return this.#db;
	}

	/**
	 * Reads the sessions left by the previous run. Ephemeral ones (persist:false) cannot come back:
	 * they become tombstones so their ids answer 410 instead of 404.
	 */
	restore(): StoredSession[] {
		const rows = this.#db.prepare("SELECT id, record FROM sessions").all() as { id: string; record: string }[];
		const records: StoredSession[] = [];
		for (const row of rows) {
			const parsed = parseStoredRecord(row);
			if ("skip" in parsed) this.#events.skipped?.(parsed.id, parsed.skip);
			else records.push(parsed.record);
		}
		const now = new Date();
		for (const record of records.filter((r) => !r.persist)) this.bury(record.id, "restart", now);
		this.#write("gc", () =>
			this.#db.prepare("DELETE FROM gone WHERE at < ?").run(new Date(now.getTime() - tombstoneMs).toISOString()),
		);
		return records.filter((r) => r.persist).sort((a, b) => a.createdAt.localeCompare(b.createdAt));
	}

	/** False when the write failed (it is retried later). */
	save(record: StoredSession): boolean {
		const text = JSON.stringify(record);
		return this.#write(`session:${record.id}`, () => this.#upsert.run(record.id, text));
	}

	remove(id: string): void {
		this.#pending.delete(`session:${id}`);
		this.#write(`remove:${id}`, () => this.#remove.run(id));
	}

	/** Forgets a session but remembers why, for a 410 on its id. */
	bury(id: string, reason: Tombstone["reason"], at = new Date()): void {
		this.#pending.delete(`session:${id}`);
		this.#write(`remove:${id}`, () => {
			this.#remove.run(id);
			this.#db
				.prepare("INSERT OR REPLACE INTO gone (id, reason, at) VALUES (?, ?, ?)")
				.run(id, reason, at.toISOString());
		});
	}

	tombstone(id: string): Tombstone | undefined {
		return this.#db.prepare("SELECT id, reason, at FROM gone WHERE id = ?").get(id) as Tombstone | undefined;
	}

	/** Marks the run clean and releases the lock. */
	close(): void {
		if (!this.#db.isOpen) return;
		this.retry();
		// Clean only if everything reached the disk; else the next run is careful about event numbers.
		if (this.#pending.size === 0) {
			this.#write("clean", () =>
				this.#db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('clean', '1')").run(),
			);
		}
		this.#db.close();
	}
}

/** The registry's default backend: gateway.db in `dataDir`, opened when the registry opens (and again after a detach). */
export function sqliteSessions(dataDir: string): OpenStore {
	return (events) => new SqliteStore(dataDir, events);
}
