import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import type { DatabaseSync } from "node:sqlite";
import type { PiState } from "./session.ts";
import type { CreateSessionBody } from "./spawn.ts";

/** What survives a gateway restart: enough to list a session and start pi again on its file. */
export interface StoredSession {
	id: string;
	name?: string;
	cwd: string;
	persist: boolean;
	/** The create body, so a resume starts pi with the same prompts, tools and extensions. */
	options: CreateSessionBody;
	piState: PiState;
	createdAt: string;
	lastActivityAt: number;
	lastSeq: number;
}

export interface Tombstone {
	id: string;
	reason: "restart" | "idle";
	at: string;
}

/** node:sqlite still prints an ExperimentalWarning on load; this is the one warning hidden. */
function loadSqlite(): typeof import("node:sqlite") {
	const emit = process.emitWarning;
	process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
		const text = typeof warning === "string" ? warning : warning.message;
		if (/SQLite/.test(text)) return;
		(emit as (...args: unknown[]) => void).call(process, warning, ...rest);
	}) as typeof process.emitWarning;
	try {
		return createRequire(import.meta.url)("node:sqlite");
	} finally {
		process.emitWarning = emit;
	}
}

const schema = `
CREATE TABLE IF NOT EXISTS sessions (
	id TEXT PRIMARY KEY,
	record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS gone (
	id TEXT PRIMARY KEY,
	reason TEXT NOT NULL,
	at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (
	key TEXT PRIMARY KEY,
	value TEXT NOT NULL
);`;

/** Tombstones older than this are forgotten: after a week an unknown id is simply 404. */
const tombstoneMs = 7 * 24 * 3600_000;

/**
 * The session registry on disk: one SQLite file (Node's built-in driver, no native addon) in the
 * data directory. The connection holds an exclusive lock, so a second gateway on the same data
 * directory fails at startup instead of resuming the same pi sessions twice.
 */
export class SessionStore {
	readonly #db: DatabaseSync;
	readonly #upsert;
	readonly #remove;
	/** False when the previous gateway did not shut down cleanly (killed, crashed, power loss). */
	readonly previousRunClean: boolean;

	constructor(dataDir: string) {
		mkdirSync(dataDir, { recursive: true });
		const { DatabaseSync } = loadSqlite();
		const path = join(dataDir, "gateway.db");
		this.#db = new DatabaseSync(path);
		try {
			this.#db.exec("PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;");
			// The first write takes the lock, and EXCLUSIVE mode keeps it until the connection closes.
			this.#db.exec(`BEGIN IMMEDIATE; ${schema} COMMIT;`);
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
		this.#db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('clean', '0')").run();
		this.#upsert = this.#db.prepare("INSERT OR REPLACE INTO sessions (id, record) VALUES (?, ?)");
		this.#remove = this.#db.prepare("DELETE FROM sessions WHERE id = ?");
	}

	/**
	 * Reads the sessions left by the previous run. Ephemeral ones (persist:false) cannot come back:
	 * they become tombstones so their ids answer 410 instead of 404.
	 */
	restore(): StoredSession[] {
		const rows = this.#db.prepare("SELECT record FROM sessions").all() as { record: string }[];
		const records = rows.map((row) => JSON.parse(row.record) as StoredSession);
		const now = new Date();
		for (const record of records.filter((r) => !r.persist)) this.bury(record.id, "restart", now);
		this.#db.prepare("DELETE FROM gone WHERE at < ?").run(new Date(now.getTime() - tombstoneMs).toISOString());
		return records.filter((r) => r.persist).sort((a, b) => a.createdAt.localeCompare(b.createdAt));
	}

	save(record: StoredSession): void {
		this.#upsert.run(record.id, JSON.stringify(record));
	}

	remove(id: string): void {
		this.#remove.run(id);
	}

	/** Forgets a session but remembers why, for a 410 on its id. */
	bury(id: string, reason: Tombstone["reason"], at = new Date()): void {
		this.#remove.run(id);
		this.#db.prepare("INSERT OR REPLACE INTO gone (id, reason, at) VALUES (?, ?, ?)").run(id, reason, at.toISOString());
	}

	tombstone(id: string): Tombstone | undefined {
		return this.#db.prepare("SELECT id, reason, at FROM gone WHERE id = ?").get(id) as Tombstone | undefined;
	}

	/** Marks the run clean and releases the lock. */
	close(): void {
		if (!this.#db.isOpen) return;
		this.#db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('clean', '1')").run();
		this.#db.close();
	}
}
