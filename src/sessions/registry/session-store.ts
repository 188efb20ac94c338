import type { CreateSessionBody } from "../process/spawn.ts";
import type { StoredBudget } from "../session/budget.ts";
import type { PiState } from "../session/session-types.ts";

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
	/**
	 * Dialogs open when the record was written (cluster mode): a node that takes the session over
	 * from a dead one answers 410 for them, since the pi process that asked is gone.
	 */
	pendingApprovals?: string[];
	/** Client tool calls pending when the record was written: likewise 410 on the node that takes over. */
	pendingToolCalls?: string[];
	/** The session had a pi process when the record was written (after an unclean stop, it died then). */
	live?: boolean;
	/** The run in progress when the record was written (written as a run starts and as it settles). */
	runId?: string;
	/** The session's budget and what its runs used (budget.ts): usage survives a restart. */
	budget?: StoredBudget;
}

/** What the store tells its owner: a write failed, writes work again, a row could not be read. */
export interface StoreEvents {
	writeFailed?(error: Error): void;
	writable?(): void;
	skipped?(id: string, reason: string): void;
	/** Another node owns the session now (cluster mode): this node must drop it without a write. */
	lost?(id: string): void;
}

export interface Tombstone {
	id: string;
	reason: "restart" | "idle";
	at: string;
}

/**
 * Where the registry keeps sessions across restarts: what the journal (journal.ts) needs and
 * nothing more, so a second backend (PostgreSQL for several nodes) is one new class and no
 * change in sessions/. SqliteStore (src/store/sqlite/sessions.ts) is the default, PostgresStore
 * (src/store/postgres/sessions.ts, --database-url) writes behind into PostgreSQL. Every write fails soft:
 * it reports through StoreEvents, keeps the write for retry(), and never throws.
 */
export interface SessionStore {
	/** False when the previous gateway did not shut down cleanly (event numbers may be lost). */
	readonly previousRunClean: boolean;
	/** The backing storage was deleted or replaced under the store: the journal reopens it. */
	readonly detached: boolean;
	/** The previous run's persistent sessions (ephemeral ones become tombstones). */
	restore(): StoredSession[];
	/** False when the write failed (it is retried later). */
	save(record: StoredSession): boolean;
	remove(id: string): void;
	/** Forgets a session but remembers why, for a 410 on its id. */
	bury(id: string, reason: Tombstone["reason"], at?: Date): void;
	tombstone(id: string): Tombstone | undefined;
	/**
	 * Keeps a copy of pi's session file (the conversation) with the session, so it survives the
	 * loss of this node's disk. Optional: SQLite sits on that same disk and has no use for it.
	 */
	saveConversation?(id: string, file: string): void;
	/** Writes the kept copy back to `file`; false when there is none. */
	restoreConversation?(id: string, file: string): Promise<boolean>;
	/** Resolves once every write queued so far was tried (a store that writes behind: PostgreSQL). */
	settled?(): Promise<void>;
	/** Retries failed writes; with none, probes whether writing works again. */
	retry(): void;
	/**
	 * Marks the run clean and releases the store (its lock). A store that writes behind
	 * (PostgreSQL) returns a promise that resolves once its last writes were tried.
	 */
	close(): void | Promise<void>;
}

/** Opens a store, reporting to `events`; the registry calls it at start and after a detach. */
export type OpenStore = (events: StoreEvents) => SessionStore;
