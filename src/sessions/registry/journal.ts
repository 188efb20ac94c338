import { existsSync } from "node:fs";
import type { Logger } from "pino";
import type { CreateSessionBody } from "../process/spawn.ts";
import type { Session } from "../session/session.ts";
import type { OpenStore, SessionStore, StoredSession, Tombstone } from "./session-store.ts";

/** Sequence numbers skipped after an unclean stop: the last second of events may not be on disk. */
export const unsafeSeqMargin = 100_000;

/** The sessions the journal writes: the registry's, read when it saves or flushes. */
export interface JournalSource {
	sessions(): Iterable<Session>;
	has(id: string): boolean;
	optionsOf(id: string): CreateSessionBody;
	/** The store says another node owns the session now (cluster mode). */
	lost?(id: string): void;
}

export interface StoreHealth {
	writable: boolean;
	error?: string;
	writeErrors: number;
	recreatedAt?: string;
}

/**
 * The registry's memory on disk: restores the previous run's sessions, saves a session when it
 * changes (on events that matter at once, else on the periodic flush), keeps the store's health
 * (fail-soft writes: a full disk refuses new sessions, live ones go on) and reopens a store whose
 * file was deleted under it. It knows the store only through the SessionStore interface.
 */
export class Journal {
	readonly #open: OpenStore;
	readonly #logger: Logger;
	readonly #source: JournalSource;
	/** Each session's change key as last written, so a flush writes only what changed. */
	readonly #saved = new Map<string, string>();
	#store: SessionStore | undefined;
	readonly #storeHealth: { error?: string; writeErrors: number; recreatedAt?: string } = { writeErrors: 0 };

	constructor(open: OpenStore, logger: Logger, source: JournalSource) {
		this.#open = open;
		this.#logger = logger;
		this.#source = source;
	}

	/** Opens the store and reads the previous run's sessions; `margin` is added to their last seq. */
	restore(): { records: StoredSession[]; margin: number } {
		const store = this.#openStore();
		this.#store = store;
		return { records: store.restore(), margin: store.previousRunClean ? 0 : unsafeSeqMargin };
	}

	#openStore(): SessionStore {
		const log = this.#logger;
		return this.#open({
			writeFailed: (error) => {
				this.#storeHealth.writeErrors++;
				if (this.#storeHealth.error === undefined) {
					log.error({ err: error }, "registry: write failed; new sessions are refused until it works again");
				}
				this.#storeHealth.error = error.message;
			},
			writable: () => {
				log.info({ after: this.#storeHealth.error }, "registry: writes work again");
				this.#storeHealth.error = undefined;
			},
			skipped: (sessionId, reason) => log.error({ sessionId, reason }, "registry: unreadable session skipped"),
			lost: (sessionId) => this.#source.lost?.(sessionId),
		});
	}

	/** The last write error while writes fail, else undefined. */
	get writeError(): string | undefined {
		return this.#storeHealth.error;
	}

	/**
	 * The registry's disk, checked now: a gateway.db deleted or replaced under the open connection
	 * is recreated from memory (and its lock taken again), failed writes are retried.
	 */
	health(): StoreHealth {
		this.#checkStore();
		const { error, writeErrors, recreatedAt } = this.#storeHealth;
		return { writable: error === undefined, error, writeErrors, recreatedAt };
	}

	#checkStore(): void {
		const store = this.#store;
		if (!store) return;
		if (store.detached) {
			try {
				store.close();
			} catch {}
			try {
				this.#store = this.#openStore();
			} catch (error) {
				this.#store = store;
				this.#storeHealth.error = `gateway.db is gone and cannot be recreated: ${(error as Error).message}`;
				return;
			}
			this.#storeHealth.recreatedAt = new Date().toISOString();
			this.#storeHealth.error = undefined;
			const sessions = [...this.#source.sessions()];
			this.#logger.error(
				{ sessions: sessions.length },
				"registry: gateway.db was deleted or replaced; recreated from memory",
			);
			// Everything is written again on this flush (tombstones of reaped sessions are lost).
			this.#saved.clear();
			for (const session of sessions) this.save(session);
			return;
		}
		store.retry();
	}

	/** The store (undefined before restore() and after close()); tests reach its database through it. */
	get store(): SessionStore | undefined {
		return this.#store;
	}

	tombstone(id: string): Tombstone | undefined {
		return this.#store?.tombstone(id);
	}

	/** Forgets a session: its row goes. */
	forget(id: string): void {
		this.#saved.delete(id);
		this.#store?.remove(id);
	}

	/** Forgets an ephemeral session but keeps why, for a 410 on its id. */
	bury(id: string, reason: Tombstone["reason"]): void {
		this.#store?.bury(id, reason);
	}

	/** Forgets a session here without touching the store (it moved to another node). */
	drop(id: string): void {
		this.#saved.delete(id);
	}

	/** What the store keeps of a session. */
	record(session: Session): StoredSession {
		const p = session.piState;
		if (p.sessionFile && !p.fileSeen && existsSync(p.sessionFile)) p.fileSeen = true;
		return {
			id: session.id,
			name: session.name,
			cwd: session.cwd,
			persist: session.persist,
			options: this.#source.optionsOf(session.id),
			piState: session.piState,
			createdAt: session.createdAt.toISOString(),
			lastActivityAt: session.lastActivityAt,
			lastSeq: session.events.lastSeq,
			...(session.approvals.pendingCount > 0 && {
				pendingApprovals: session.approvals.list("pending").map((a) => a.id),
			}),
			...(session.toolCalls.pendingCount > 0 && {
				pendingToolCalls: session.toolCalls.list("pending").map((c) => c.id),
			}),
			...(session.hasProcess && { live: true }),
			...(session.currentRunId !== undefined && { runId: session.currentRunId }),
			budget: session.budget.stored(),
		};
	}

	/** What changes over a session's life, cheap to compare: seq, activity, name, pi's file and model. */
	#changeKey(session: Session): string {
		const { piState: p } = session;
		return JSON.stringify([
			session.events.lastSeq,
			session.lastActivityAt,
			session.name,
			p.sessionFile,
			p.model?.id,
			p.thinkingLevel,
			session.approvals.pendingCount,
			session.toolCalls.pendingCount,
			session.hasProcess,
			session.currentRunId,
			session.budget.limits,
		]);
	}

	/** False when the write failed (the store retries it). */
	save(session: Session): boolean {
		if (!this.#store || !this.#source.has(session.id)) return true;
		this.#saved.set(session.id, this.#changeKey(session));
		return this.#store.save(this.record(session));
	}

	/** Copies pi's session file into the store, when it has a place for it (PostgreSQL). */
	saveConversation(session: Session): void {
		const file = session.piState.sessionFile;
		if (!this.#store?.saveConversation || !file || !session.persist || !this.#source.has(session.id)) return;
		this.#store.saveConversation(session.id, file);
	}

	/** Puts a lost session file back from the store's copy; false when it has none. */
	async restoreConversation(session: Session): Promise<boolean> {
		const file = session.piState.sessionFile;
		if (!this.#store?.restoreConversation || !file) return false;
		return await this.#store.restoreConversation(session.id, file);
	}

	/** Resolves once what was queued so far (a settled run's conversation among it) was written or failed. */
	async settled(): Promise<void> {
		await this.#store?.settled?.();
	}

	/** Writes the sessions that changed since their last write. Never throws: it runs on a timer. */
	flush(): void {
		this.#checkStore();
		for (const session of this.#source.sessions()) {
			if (this.#saved.get(session.id) !== this.#changeKey(session)) this.save(session);
		}
	}

	/** The last flush, then the store is closed: nothing writes after this (a late exit event). */
	async close(): Promise<void> {
		this.flush();
		const store = this.#store;
		this.#store = undefined;
		await store?.close();
	}
}
