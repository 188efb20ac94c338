import type { Logger } from "pino";
import type { Config } from "../config/config.ts";
import type { SessionRegistry, StoredSession } from "../sessions/registry/index.ts";
import type { FolderRestoreReport, Session } from "../sessions/session/index.ts";
import { type ScanResult, scanFolder } from "../workspace/folder-scan.ts";
import { adoptFolder } from "./folder-adoption.ts";
import { realRoot } from "./folder-home.ts";
import { emit, emptyHeld, failedEvent, type Held, heldOf, overCapEvent, plan } from "./folder-manifest.ts";
import type { FolderStore } from "./folder-store.ts";

export type { FolderRestoreReport } from "../sessions/session/index.ts";

/**
 * Cluster mode: a session's folder follows the session to another node, through PostgreSQL (the
 * one store; no shared filesystem). The owner stores the folder when the session starts, at every
 * settled run and when pi stops (folder-store.ts: content-addressed chunks, a manifest of rows): a
 * file whose lstat did not change is not read, a chunk the database holds is not sent, a folder
 * that did not change writes nothing. A per-session cap bounds it (--workspace-sync-max-bytes):
 * past it the rest is left out and said (a `folder_sync` event, a metric). The node that takes a
 * session over restores its folder under its own root before pi starts (folder-adoption.ts).
 */

/** What Metrics reads at scrape time (src/http/observability/folder-metrics.ts). */
export interface FolderSyncCounts {
	stored: number;
	unchanged: number;
	failed: number;
	overCap: number;
	/** Bytes sent to PostgreSQL: new chunks and manifest rows. */
	bytes: number;
	restoresComplete: number;
	restoresIncomplete: number;
}

export interface SyncOutcome {
	outcome: "stored" | "unchanged" | "failed" | "skipped";
	/** Bytes sent to PostgreSQL (chunks and rows). */
	bytes: number;
	files: number;
	/** Files read (their lstat changed since they were last read). */
	read: number;
	omitted: number;
}

/** Chunk bytes buffered before they are checked against the database and sent. */
const batchBytes = 8 * 1024 * 1024;
/** Syncs running at once on a node (each reads a folder and talks to PostgreSQL). */
const concurrency = 2;
/** An answer waits this long at most for its session's folder to be stored (a database that stopped answering). */
const durableWaitMs = 10_000;
/** How often a node forgets the folders of sessions it gave up, and collects chunks no session holds. */
const pruneEveryMs = 10 * 60 * 1000;

class RetryError extends Error {}
export class FolderSync {
	readonly #config: Config;
	readonly #store: FolderStore;
	readonly #registry: SessionRegistry;
	readonly #logger: Logger;
	readonly #held = new Map<string, Held>();
	readonly #running = new Map<string, Promise<void>>();
	readonly #again = new Set<string>();
	/** Stores asked for per session, so a request can tell whether it caused one (durable()). */
	readonly #asked = new Map<string, number>();
	#slots = concurrency;
	readonly #waiting: (() => void)[] = [];
	#hold: ((id: string) => () => void) | undefined;
	#timer: NodeJS.Timeout | undefined;
	#unsubscribe: (() => void) | undefined;
	readonly counts: FolderSyncCounts = {
		stored: 0,
		unchanged: 0,
		failed: 0,
		overCap: 0,
		bytes: 0,
		restoresComplete: 0,
		restoresIncomplete: 0,
	};

	constructor(config: Config, store: FolderStore, registry: SessionRegistry, logger: Logger) {
		this.#config = config;
		this.#store = store;
		this.#registry = registry;
		this.#logger = logger.child({ component: "folder-sync" });
	}

	/**
	 * Follows every session's events (a sync when it starts, at each settled run, when pi stops);
	 * `hold` keeps a session on this node while its folder is being stored (not given back meanwhile).
	 */
	start(hold?: (id: string) => () => void): void {
		this.#hold = hold;
		this.#unsubscribe = this.#registry.subscribeAll((id, event) => {
			const first = event.type === "session_status" && !this.#held.has(id) && !this.#running.has(id);
			if (first || event.type === "agent_settled" || event.type === "session_exit") this.schedule(id);
		});
		this.#timer = setInterval(() => {
			// What is kept of sessions this node no longer holds (given back, taken by another node) goes.
			for (const id of [...this.#held.keys(), ...this.#asked.keys()])
				if (!this.#registry.has(id) && !this.#running.has(id)) this.#forget(id);
			void this.#store.collect();
		}, pruneEveryMs);
		this.#timer.unref();
	}

	/** Stores the session's folder soon; a sync already running for it runs once more after. */
	schedule(id: string): void {
		this.#asked.set(id, (this.#asked.get(id) ?? 0) + 1);
		if (this.#running.has(id)) {
			this.#again.add(id);
			return;
		}
		const release = this.#hold?.(id);
		const run = (async () => {
			do {
				this.#again.delete(id);
				await this.#slot(() => this.sync(id));
			} while (this.#again.has(id));
		})()
			.catch((error) => this.#logger.warn({ sessionId: id, err: error }, "folder sync failed"))
			.finally(() => {
				this.#running.delete(id);
				release?.();
			});
		this.#running.set(id, run);
	}

	/** Resolves once every folder being stored is stored (before the store closes). */
	async settled(): Promise<void> {
		while (this.#running.size > 0) await Promise.all(this.#running.values());
	}

	/** How many stores of the session's folder were asked for so far (a mark for durable()). */
	asked(id: string): number {
		return this.#asked.get(id) ?? 0;
	}

	/**
	 * Waits (at most `ms`) until the session's folder is stored as of now, when a store was asked
	 * for since `mark` (asked()): a client told that a run settled or an upload landed can rely on
	 * the files being on any node that takes the session over; other answers do not wait.
	 */
	async durable(id: string, mark: number, ms = durableWaitMs): Promise<void> {
		const running = this.#running.get(id);
		if (!running || this.asked(id) === mark) return;
		let timer: NodeJS.Timeout | undefined;
		await Promise.race([running, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
		clearTimeout(timer);
	}

	async #slot<T>(work: () => Promise<T>): Promise<T> {
		if (this.#slots === 0) await new Promise<void>((resolve) => this.#waiting.push(resolve));
		else this.#slots--;
		try {
			return await work();
		} finally {
			const next = this.#waiting.shift();
			if (next) next();
			else this.#slots++;
		}
	}

	/** One store of the session's folder into PostgreSQL (see the module's comment). */
	async sync(id: string): Promise<SyncOutcome> {
		const skipped: SyncOutcome = { outcome: "skipped", bytes: 0, files: 0, read: 0, omitted: 0 };
		if (!this.#registry.has(id)) {
			this.#held.delete(id);
			return skipped;
		}
		const session = this.#registry.get(id);
		if (!session.persist) return skipped; // an ephemeral session never moves
		// Its row (and owner) are written first: the manifest's commit is fenced on them.
		await this.#registry.persisted();
		for (let attempt = 0; ; attempt++) {
			try {
				const outcome = await this.#syncOnce(session);
				if (outcome.outcome === "stored") this.counts.stored++;
				else if (outcome.outcome === "unchanged") this.counts.unchanged++;
				return outcome;
			} catch (error) {
				this.#held.delete(id);
				// Another node stored it since (stale), or a chunk was collected under us: read it again, once.
				const collected = (error as { code?: string }).code === "23503";
				if (attempt === 0 && (error instanceof RetryError || collected)) continue;
				this.counts.failed++;
				const detail = error instanceof Error ? error.message : String(error);
				this.#logger.warn({ sessionId: id, err: error }, "the session's folder could not be stored");
				emit(session, "folder_sync", failedEvent(detail, this.#config.workspaceSyncMaxBytes));
				return { ...skipped, outcome: "failed" };
			}
		}
	}

	async #syncOnce(session: Session): Promise<SyncOutcome> {
		const id = session.id;
		const root = realRoot(this.#config);
		// Its path below this node's root (a folder elsewhere keeps its absolute path: no other node will take it).
		const rel =
			session.cwd === root ? "" : session.cwd.startsWith(`${root}/`) ? session.cwd.slice(root.length + 1) : session.cwd;
		const held = this.#held.get(id) ?? (await this.#load(id, root, rel));
		const maxBytes = this.#config.workspaceSyncMaxBytes;
		const pending = new Map<string, Buffer>();
		let pendingBytes = 0;
		let sent = 0;
		// Chunks the session does not hold yet: asked of the database in batches, and only the absent ones sent.
		const send = async () => {
			const absent = new Set(
				(await this.#store.absent([...pending.keys()].map((h) => Buffer.from(h, "hex")))).map((h) => h.toString("hex")),
			);
			const chunks = [...pending].filter(([h]) => absent.has(h));
			sent += await this.#store.put(chunks.map(([h, content]) => ({ hash: Buffer.from(h, "hex"), content })));
			pending.clear();
			pendingBytes = 0;
		};
		let scanned: ScanResult = {
			entries: new Map(),
			stats: new Map(),
			bytes: 0,
			read: 0,
			omitted: [],
			truncated: false,
		};
		if (maxBytes > 0) {
			scanned = await scanFolder(session.cwd, {
				maxBytes,
				known: held.entries,
				stats: held.stats,
				chunk: async (hash, content) => {
					const hex = hash.toString("hex");
					if (held.refs.has(hex) || pending.has(hex)) return;
					pending.set(hex, content);
					pendingBytes += content.length;
					if (pendingBytes >= batchBytes) await send();
				},
			});
			await send();
		}
		const next = plan(held, scanned, root, rel, maxBytes);
		const { omitted } = next.change;
		if (next.overCap) {
			this.counts.overCap++;
			emit(session, "folder_sync", overCapEvent(scanned, omitted, maxBytes));
		}
		const outcome = { bytes: sent, files: next.change.files, read: scanned.read, omitted: omitted.count };
		this.counts.bytes += sent;
		if (next.unchanged) {
			held.stats = scanned.stats;
			return { outcome: "unchanged", ...outcome };
		}
		const committed = await this.#store.commit(id, next.change);
		if (committed.kind === "stale") throw new RetryError("another node stored the folder since");
		if (committed.kind === "not_owner") {
			this.#held.delete(id);
			return { outcome: "skipped", ...outcome };
		}
		this.counts.bytes += committed.bytes;
		this.#held.set(id, { ...next.next, generation: committed.generation });
		const { upserts, deletes } = next.change;
		this.#logger.debug(
			{ sessionId: id, ...outcome, upserts: upserts.length, deletes: deletes.length },
			"folder stored",
		);
		return { outcome: "stored", ...outcome, bytes: sent + committed.bytes };
	}

	async #load(id: string, root: string, rel: string): Promise<Held> {
		const stored = await this.#store.load(id);
		return stored ? heldOf(stored.state, stored.entries) : emptyHeld(root, rel);
	}

	/**
	 * A session this node takes over: its folder placed under this node's root and restored from
	 * the stored copy before pi starts (folder-adoption.ts). Never throws.
	 */
	async place(record: StoredSession): Promise<{ record: StoredSession; report?: FolderRestoreReport }> {
		const adopted = await adoptFolder(this.#config, this.#store, record, this.#logger);
		if (adopted.held) this.#held.set(record.id, adopted.held);
		else this.#held.delete(record.id);
		if (adopted.report?.complete) this.counts.restoresComplete++;
		else if (adopted.report) this.counts.restoresIncomplete++;
		return adopted;
	}

	#forget(id: string): void {
		this.#held.delete(id);
		this.#asked.delete(id);
	}

	/** Stops following events and waits for the stores under way (before the store closes). */
	async close(): Promise<void> {
		this.#unsubscribe?.();
		clearInterval(this.#timer);
		await this.settled();
	}
}
