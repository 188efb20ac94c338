// Over 300 lines on purpose: the registry is where the cross-session rules meet, and each needs
// the same map of sessions: create (cold or from the warm pool), resume, take over, give back,
// drop, delete, the hub and the shutdown. Each job with a body of its own is beside it: the
// live-process cap (live-cap.ts), building a session (session-factory.ts), warm-pool starts
// (warm-start.ts), restored records (stored-restore.ts), continuing a file (continuable.ts),
// idle reaping (idle-reaper.ts), what is written when (journal-events.ts), the disk (journal.ts
// over the SessionStore server.ts opens), spawning (spawn.ts), paths (guard.ts), folder
// retention (retention.ts), a fork's folder and conversation (fork.ts).
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "pino";
import type { Config } from "../../config/config.ts";
import { pickLimits, sessionLimitKeys } from "../../config/limits.ts";
import { type Dialect, dialectOf, type PiPackage, piPackageOf } from "../../pi/dialect.ts";
import type { UiRequest } from "../../pi/protocol.ts";
import { GatewayError } from "../../shared/errors.ts";
import type { Approval } from "../dialogs/approvals.ts";
import type { LoggedEvent } from "../events/event-log.ts";
import { type Area, areaOf, ensureArea } from "../process/areas.ts";
import { ownFolder, piSessionDir } from "../process/session-files.ts";
import { type CreateSessionBody, planSpawn, type SpawnPlan } from "../process/spawn.ts";
import { attachRelay } from "../relay/index.ts";
import type { Session, SessionInit, SessionLimits, SpawnCommand } from "../session/session.ts";
import { assertContinuable, folderHolder, resumeFileFor } from "./continuable.ts";
import type { Seed } from "./fork.ts";
import { reapEveryMs, reapIdle } from "./idle-reaper.ts";
import { Journal, type StoreHealth, unsafeSeqMargin } from "./journal.ts";
import { journalOnEvents } from "./journal-events.ts";
import { LiveCap, type LiveShare } from "./live-cap.ts";
import { fitModel, isPoolable } from "./pooled-model.ts";
import { wakeArea, wakeOnPooled } from "./pooled-wake.ts";
import type { Caller } from "./resume-lookup.ts";
import { FolderRetention, ownFolderOf } from "./retention.ts";
import { buildSession, newSessionId, type SessionHost, shuttingDown } from "./session-factory.ts";
import { SessionOrder } from "./session-order.ts";
import type { OpenStore, SessionStore, StoredSession } from "./session-store.ts";
import { restoredAtStart, restoredByTakeover, restoreKept, type Takeover } from "./stored-restore.ts";
import { WarmPools } from "./warm-pool.ts";
import { startPooled } from "./warm-start.ts";

export type { Caller } from "./resume-lookup.ts";
export type { Takeover } from "./stored-restore.ts";

export type HubListener = (sessionId: string, event: LoggedEvent) => void;

/**
 * What cluster mode (src/cluster/) asks of the registry's moments: a pi process may start only
 * while this node owns the session, and the fence must know every process to stop it in time.
 */
export interface ClusterHooks {
	/** Refuses new sessions (503) while the database is out of reach. */
	assertCanCreate(): Promise<void>;
	/** Throws unless this node still owns the session (checked in the database). */
	beforeStart(session: Session): Promise<void>;
	started(session: Session): void;
	exited(sessionId: string): void;
	/** Every session is stopped and the store is about to close: the cluster leaves. */
	closing(): Promise<void>;
}

const anyCaller: Caller = { admin: true, sees: () => true };
const flushEveryMs = 1000;

/**
 * All sessions — with a pi process or `stopped` — and the cross-session views: approval inbox
 * and the all-sessions event hub. Owns the live-process cap (least recently used idle session
 * hibernated first), idle reaping, and the on-disk registry that lets sessions outlive a restart.
 */
export class SessionRegistry {
	readonly #config: Config;
	/** The pi package --pi-command runs, when it can be told without starting it, and its protocol. */
	readonly piPackage: PiPackage | undefined;
	readonly dialect: Dialect;
	readonly #logger: Logger;
	readonly #sessions = new Map<string, Session>();
	/** The same sessions in list order (session-order.ts): changed only beside #sessions, in #adopt and #forget. */
	readonly #order = new SessionOrder();
	readonly #options = new Map<string, CreateSessionBody>();
	readonly #waking = new Map<string, Promise<void>>();
	readonly #hub = new Set<HubListener>();
	readonly #journal: Journal;
	#timers: NodeJS.Timeout[] = [];
	readonly #live: LiveCap;
	#liveShares: ((sessionId: string) => LiveShare | undefined) | undefined;
	/** What each session asks of the registry (session-factory.ts). */
	readonly #sessionHost: SessionHost;
	#closing = false;
	/** Pooled pi taken out to wake a session and not handed over yet (pooled-wake.ts). */
	readonly #inHand = new Set<Session>();
	#cluster: ClusterHooks | undefined;
	readonly pool: WarmPools | undefined;

	/** `openStore` opens the backend (src/store/: SQLite in the data directory, or PostgreSQL); the composition root picks it. */
	constructor(config: Config, logger: Logger, openStore: OpenStore) {
		this.#config = config;
		this.piPackage = piPackageOf(config.piCommand ?? []);
		this.dialect = dialectOf(this.piPackage);
		this.#logger = logger;
		this.#journal = new Journal(openStore, logger, {
			sessions: () => this.#sessions.values(),
			has: (id) => this.#sessions.has(id),
			optionsOf: (id) => this.#options.get(id) as CreateSessionBody,
			lost: (id) => this.evict(id, "another node owns it now"),
		});
		this.#sessionHost = {
			config: this.#config,
			logger: this.#logger,
			dialect: this.dialect,
			limits: () => this.limits(),
			closing: () => this.#closing,
			resume: (id) => this.resume(id),
			quietDialog: (id, request) => this.#quietDialogs?.(id, request),
		};
		this.#live = new LiveCap(config.maxLiveSessions, {
			sessions: () => this.#sessions.values(),
			pool: () => this.pool,
			stopping: () => (this.#closing ? shuttingDown() : undefined),
			shareOf: (session) => this.#liveShares?.(session.id),
		});
		mkdirSync(piSessionDir(config), { recursive: true });
		// Sessions without cwd get folders of their own in it (the default root lives in the data dir),
		// and a warm pi is bound to an area in it before any session: an operator's new root is made too.
		mkdirSync(config.workspaceRoot, { recursive: true });
		if (config.warmPool > 0)
			this.pool = new WarmPools(config.warmPool, areaOf(config, "admin", true), {
				start: (area, spawned) =>
					startPooled(config, area, (id, options, cwd) => this.#build(id, options, cwd), spawned),
				logger,
				room: () => this.#live.hasRoom,
				ownFolders: config.defaultCwd === "own",
				max: config.warmPoolMax,
			});
	}

	/**
	 * Opens the on-disk registry, brings back the previous run's sessions as `stopped`, and starts
	 * the housekeeping timers. startGateway calls it; an app built in-process may skip it.
	 */
	open(): void {
		const { records, margin } = this.#journal.restore();
		for (const record of records) {
			const restored = restoredAtStart(record, margin);
			const session = this.#register(record.id, record.options, record.cwd, { restored, name: record.name });
			restoreKept(session, record);
			this.#journal.save(session);
		}
		if (this.#sessions.size > 0) this.#logger.info({ sessions: this.#sessions.size }, "sessions restored (stopped)");
		const idle = { persistent: this.#config.idleTimeoutMs, ephemeral: this.#config.ephemeralIdleTimeoutMs };
		this.#timers.push(setInterval(() => this.#journal.flush(), flushEveryMs).unref());
		const reap = () =>
			reapIdle(
				idle,
				this.#sessions,
				(id) => this.#closing || this.#waking.has(id),
				(id) => {
					this.#forget(id);
					this.#journal.bury(id, "idle");
				},
			);
		const every = reapEveryMs(idle);
		if (every !== undefined) this.#timers.push(setInterval(reap, every).unref());
	}

	/**
	 * Starts the operator's warm pool. startGateway calls it once it listens: each pooled pi's spawn
	 * holds the event loop for a few ms and its start takes a core for ≈ 0.3 s, which the start
	 * itself (and the first requests) need more; a create before it is up starts cold.
	 */
	warm(): void {
		this.pool?.fill();
	}

	/**
	 * Resolves once the store holds what happened so far: a wait-mode run answers after its
	 * conversation is saved, so in cluster mode a node that dies right after loses no answered run.
	 */
	persisted(): Promise<void> {
		return this.#journal.settled();
	}

	/** The registry's disk, checked now (see Journal.health). */
	storeHealth(): StoreHealth {
		return this.#journal.health();
	}

	/** The store (undefined before open() and after shutdown); tests reach its database through it. */
	get store(): SessionStore | undefined {
		return this.#journal.store;
	}

	get closing(): boolean {
		return this.#closing;
	}

	get size(): number {
		return this.#sessions.size;
	}

	/** Sessions with a pi process that is not on its way out, plus slots promised to starts and the warm pool. */
	get liveCount(): number {
		return this.#live.count;
	}

	limits(): SessionLimits {
		return pickLimits(this.#config, sessionLimitKeys);
	}

	#quietDialogs: ((sessionId: string, request: UiRequest) => Promise<unknown> | undefined) | undefined;
	/** Dialogs the gateway answers itself (Session.quietDialog): the change tracker's snapshot gate. */
	setQuietDialogs(handler: (sessionId: string, request: UiRequest) => Promise<unknown> | undefined): void {
		this.#quietDialogs = handler;
	}

	/** Whose share of the live slots a session counts in (its owner's), for a wake-up: live-cap.ts. */
	setLiveShares(shareOf: (sessionId: string) => LiveShare | undefined): void {
		this.#liveShares = shareOf;
	}

	/** Cluster mode: the registry asks before starting pi and reports every process (src/cluster/). */
	setCluster(hooks: ClusterHooks): void {
		this.#cluster = hooks;
	}

	/**
	 * `caller` decides which sessions a `resume` may find (default: an admin, who sees them all). A
	 * `seed` (fork.ts) fills the new session's own folder and gives the file pi starts on.
	 */
	async create(body: CreateSessionBody, caller: Caller = anyCaller, seed?: Seed): Promise<Session> {
		if (this.#closing) throw shuttingDown();
		await this.#cluster?.assertCanCreate();
		if (this.#sessions.size >= this.#config.maxSessions) {
			throw new GatewayError(
				429,
				"too_many_sessions",
				`At most ${this.#config.maxSessions} sessions (stopped ones count)`,
			);
		}
		const resume = body.resume
			? resumeFileFor(this.#config, body.resume, caller, this.#sessions, (id) => this.#options.get(id))
			: undefined;
		this.#assertStorable();
		// A warm child was started in one area's folder, as a cold one of that area: only for its callers.
		const area = caller.area ?? areaOf(this.#config, "admin", true);
		// Within the creator's share of the live slots, pooled or not (live-cap.ts).
		const release = await this.#live.admit(caller.share);
		let session: Session;
		try {
			session = await this.#start(body, caller, area, resume, seed);
		} finally {
			release();
		}
		this.#live.assign(session, caller.share);
		return session;
	}

	async #start(
		body: CreateSessionBody,
		caller: Caller,
		area: Area,
		resume: string | undefined,
		seed: Seed | undefined,
	): Promise<Session> {
		// A model named by provider and id is set on a pooled pi, not pooled per model (pooled-model.ts).
		const plain = isPoolable(body) && resume === undefined && seed === undefined;
		const warm = plain ? await this.pool?.take(area, (pooled) => fitModel(pooled, body)) : undefined;
		if (warm) return this.#adoptPooled(warm, body);
		const id = newSessionId();
		const seeded = seed ? await this.#seed(seed, id, area) : undefined;
		let session: Session | undefined;
		try {
			const plan = planSpawn(this.#config, body, { id, resume, area: caller.area, ...seeded });
			// Registered before start so that shutdown() also stops a child that is still starting.
			session = this.#register(id, body, plan.cwd);
			await this.#launch(session, plan);
		} catch (error) {
			if (session) this.#forget(id);
			if (seeded) await this.#unseed(seeded);
			throw error;
		}
		if (seeded && body.name) await this.#name(session, body.name);
		if (!this.#journal.save(session)) {
			// A session the registry cannot hold would vanish at the next restart: refuse it now.
			await session.stop();
			this.#forget(id);
			this.#assertStorable("a write failed");
		}
		// Once this start is done (it competes for the CPU): one process ready for the area's next.
		if (plain) this.pool?.warm(area);
		return session;
	}

	/** A seeded session's own folder, `<area>/<id>` whatever --default-cwd says, filled by the seed; undone if it fails. */
	async #seed(seed: Seed, id: string, area: Area): Promise<{ cwd: string; restore?: string }> {
		const cwd = join(ensureArea(area), id);
		try {
			return { cwd, ...(await seed(id, cwd)) };
		} catch (error) {
			await this.#unseed({ cwd });
			throw error;
		}
	}

	/** What a seed made for a session that did not start: its folder (as a purge removes one) and its file's folder. */
	async #unseed({ cwd, restore }: { cwd: string; restore?: string }): Promise<void> {
		await this.retention.purge(cwd, () => this.list().map((s) => s.cwd));
		const files = ownFolder(this.#config, restore);
		if (files) rmSync(files, { recursive: true, force: true });
	}

	/** New sessions need the registry's disk: with writes failing they are refused (507), live ones go on. */
	#assertStorable(fallback?: string): void {
		const error = this.#journal.writeError ?? fallback;
		if (error === undefined) return;
		throw new GatewayError(
			507,
			"insufficient_storage",
			`The gateway cannot write its session registry (${error}); live sessions go on, new ones wait until it can`,
		);
	}

	/**
	 * Starts pi again on the session's file: after a hibernation, a crash or a gateway restart.
	 * Concurrent callers share one start; a session that has a process is returned as it is.
	 */
	async resume(id: string): Promise<Session> {
		const session = this.get(id);
		if (this.#closing) throw shuttingDown();
		let waking = this.#waking.get(id);
		if (!waking) {
			if (session.hasProcess && !session.isStopping) return session;
			if (!session.resumable) {
				throw new GatewayError(
					409,
					"not_resumable",
					`Session ${id} is ${session.status} and has no pi session file to continue (it was created with persist:false)`,
				);
			}
			waking = this.#restart(session).finally(() => this.#waking.delete(id));
			this.#waking.set(id, waking);
		}
		await waking;
		return session;
	}

	async #restart(session: Session): Promise<void> {
		if (session.isStopping) await session.stop();
		await this.#cluster?.beforeStart(session);
		const file = session.piState.sessionFile;
		// A lost disk (a new node, a wiped data dir): the store's copy of the conversation, if any.
		if (file && session.piState.fileSeen && !existsSync(file)) await this.#journal.restoreConversation(session);
		assertContinuable(this.#config, session, this.#sessions);
		const options = this.#options.get(session.id) as CreateSessionBody;
		// Its owner (the live share's) for the relay: a principal's own provider keys go to its sessions only.
		const owner = this.#liveShares?.(session.id)?.owner;
		if (await this.#wakePooled(session, options, owner)) {
			this.#logger.info({ sessionId: session.id, pid: session.pid, pooled: true }, "session resumed");
			this.#journal.save(session);
			return;
		}
		// Deleted (or the gateway stopping) while a pooled pi was tried: nothing is started for it.
		this.#assertWanted(session);
		// Where it is now: a wake that did not take the pooled pi may have moved it (pooled-wake.ts).
		const at = { id: session.id, restore: session.piState.sessionFile, cwd: session.cwd, owner };
		await this.#launch(session, planSpawn(this.#config, options, at));
		this.#logger.info({ sessionId: session.id, pid: session.pid }, "session resumed");
		this.#journal.save(session);
	}

	/** Throws when `session` is no longer to be started: deleted (or taken away) meanwhile, or the gateway stopping. */
	#assertWanted(session: Session): void {
		if (this.#closing) throw shuttingDown();
		if (this.#sessions.get(session.id) === session) return;
		this.get(session.id); // a session gone: its 404 or 410
		throw new GatewayError(404, "session_not_found", `No session ${session.id}`);
	}

	/** On a warm pool's pi, where one is what a cold start would be (pooled-wake.ts); false: start it cold. */
	async #wakePooled(session: Session, options: CreateSessionBody, owner: string | undefined): Promise<boolean> {
		const pool = this.pool;
		const area = pool && wakeArea(this.#config, session, options, owner);
		if (!pool || !area) return false;
		const woke = await this.#live.withinShare(async () => {
			const pooled = await pool.takePooled(area);
			if (!pooled) return false;
			// Out of the pool and not yet the session's: shutdown and killAll stop it from here.
			this.#inHand.add(pooled.session);
			try {
				return await wakeOnPooled(session, pooled, {
					config: this.#config,
					save: () => this.#journal.save(session),
					discard: (unused) => pool.discard(unused),
					cold: (why) => this.#logger.info({ sessionId: session.id, why }, "session wakes cold, not on a pooled pi"),
					shared: (folder) => folderHolder(this.#config, this.#sessions, folder, session.id) !== undefined,
					assertWanted: () => this.#assertWanted(session),
				});
			} finally {
				this.#inHand.delete(pooled.session);
			}
		}, session);
		if (woke) this.#cluster?.started(session);
		return woke;
	}

	/** Starts a child within the live-process cap (live-cap.ts). */
	async #launch(session: Session, plan: SpawnCommand & Pick<SpawnPlan, "sandboxed">): Promise<void> {
		attachRelay(session, plan.sandboxed?.relay);
		await this.#live.within(() => session.start(plan), session);
		this.#cluster?.started(session);
	}

	/** A pooled session becomes the caller's: registered, named, saved. */
	async #adoptPooled(session: Session, body: CreateSessionBody): Promise<Session> {
		// Started before the caller asked: listed (and paged) by when it was created, not spawned.
		session.createdAt = new Date();
		// And idle from now: a pooled pi may have waited longer than --idle-timeout-ms for its create.
		session.lastActivityAt = session.createdAt.getTime();
		this.#adopt(session, body);
		this.#cluster?.started(session);
		if (body.name) await this.#name(session, body.name);
		this.#journal.save(session);
		return session;
	}

	/** A name pi was not started with (a pooled pi, a fork's file that carries another). */
	async #name(session: Session, name: string): Promise<void> {
		session.name = name;
		const named = await session.request({ type: "set_session_name", name }).catch((error: Error) => ({
			success: false,
			error: error.message,
		}));
		if (!named.success) this.#logger.warn({ sessionId: session.id, error: named.error }, "naming the session failed");
	}

	#register(
		id: string,
		options: CreateSessionBody,
		cwd: string,
		extra: Pick<SessionInit, "restored" | "name"> = {},
	): Session {
		return this.#adopt(this.#build(id, options, cwd, extra), options);
	}

	#build(
		id: string,
		options: CreateSessionBody,
		cwd: string,
		extra: Pick<SessionInit, "restored" | "name"> = {},
	): Session {
		return buildSession(this.#sessionHost, id, options, cwd, extra);
	}

	#adopt(session: Session, options: CreateSessionBody): Session {
		const id = session.id;
		if (options.budget) session.budget.limits = options.budget;
		const previous = this.#sessions.get(id);
		if (previous) this.#order.remove(previous);
		this.#sessions.set(id, session);
		this.#order.add(session);
		this.#options.set(id, options);
		const journal = journalOnEvents(session, this.#journal, () => this.#cluster?.exited(id));
		// One listener, the hub first: as the event log drops a listener that throws, both go together.
		session.events.subscribe((event) => {
			for (const listener of this.#hub) listener(id, event);
			journal(event);
		});
		return session;
	}

	get(id: string): Session {
		const session = this.#sessions.get(id);
		if (session) return session;
		const gone = this.#journal.tombstone(id);
		if (gone) {
			const why =
				gone.reason === "restart"
					? `did not survive the gateway restart at ${gone.at}`
					: `was stopped at ${gone.at} after ${this.#config.ephemeralIdleTimeoutMs} ms without activity`;
			throw new GatewayError(410, "session_gone", `Session ${id} was ephemeral (persist:false) and ${why}`);
		}
		throw new GatewayError(404, "session_not_found", `No session ${id}`);
	}

	list(): Session[] {
		return [...this.#sessions.values()];
	}

	/** The sessions oldest first (then by id), from just past (ms, id) when given: a page's walk. */
	inListOrder(ms?: number, id?: string): Iterable<Session> {
		return this.#order.after(ms, id);
	}

	/** This node holds the session (in cluster mode: owns it). */
	has(id: string): boolean {
		return this.#sessions.has(id);
	}

	/**
	 * Takes over a stored session (cluster mode: claimed from the database) as `stopped`: its pi
	 * session file is looked for under this node's data dir, its event numbers continue (past a
	 * margin when the previous owner died), and the dialogs that were pending on it answer 410.
	 */
	adoptStored(record: StoredSession, takeover: Takeover): Session {
		const existing = this.#sessions.get(record.id);
		if (existing) return existing;
		const restored = restoredByTakeover(this.#config, record, takeover, unsafeSeqMargin);
		const session = this.#register(record.id, record.options, record.cwd, { restored, name: record.name });
		restoreKept(session, record, takeover);
		this.#logger.info({ sessionId: record.id, clean: takeover.clean }, "session taken over (stopped)");
		return session;
	}

	/**
	 * Gives a stopped, unwatched session up (cluster mode): it leaves this node's memory and its
	 * last state is returned for the store to write with owner NULL. Undefined when it is busy.
	 */
	release(id: string): StoredSession | undefined {
		const session = this.#sessions.get(id);
		if (!session?.isReleasable || this.#waking.has(id)) return undefined;
		const record = this.#journal.record(session);
		this.#forget(id, "keep the row");
		return record;
	}

	/**
	 * Drops a session this node no longer owns (cluster mode: its lease ran out, or a fenced write
	 * found another owner): its process is killed at once and nothing of it is written.
	 */
	evict(id: string, why: string): void {
		const session = this.#sessions.get(id);
		if (!session) return;
		this.#forget(id, "keep the row");
		session.kill("SIGKILL", true);
		this.#logger.warn({ sessionId: id, why }, "session dropped: this node no longer owns it");
	}

	/** The options a session was created with (a fork starts from them: fork.ts). */
	optionsOf(id: string): CreateSessionBody | undefined {
		return this.#options.get(id);
	}

	/** The approval policies a session was created with (policy-engine.ts reads them). */
	policiesOf(id: string): CreateSessionBody["policies"] {
		return this.#options.get(id)?.policies;
	}

	#retention: FolderRetention | undefined;
	/** Deleted sessions' own folders, kept for --workspace-retention-days (retention.ts). */
	get retention(): FolderRetention {
		this.#retention ??= new FolderRetention(this.#config, this.#logger);
		return this.#retention;
	}

	/**
	 * Stops pi and forgets the session. Its pi session file stays on disk, and so does its folder:
	 * the folder the gateway made for it (no `cwd`) is kept for the retention period, or removed now
	 * with `purge`; a folder the client named is never removed.
	 */
	async delete(id: string, options: { purge?: boolean } = {}): Promise<void> {
		const session = this.get(id);
		const named = this.#options.get(id)?.cwd;
		await session.stop();
		this.#forget(id);
		const own = ownFolderOf(this.#config, id, named, session.cwd);
		const inUse = () => this.list().map((s) => s.cwd);
		if (own) await (options.purge ? this.retention.purge(own, inUse) : this.retention.keep(id, own));
		else if (named !== undefined) await this.retention.spare(session.cwd);
	}

	/** The session leaves this registry; its row goes too, unless it lives on elsewhere (cluster mode). */
	#forget(id: string, row: "delete the row" | "keep the row" = "delete the row"): void {
		const session = this.#sessions.get(id);
		if (session) this.#order.remove(session);
		this.#sessions.delete(id);
		this.#options.delete(id);
		if (row === "keep the row") this.#journal.drop(id);
		else this.#journal.forget(id);
	}

	subscribeAll(listener: HubListener): () => void {
		this.#hub.add(listener);
		return () => this.#hub.delete(listener);
	}

	/** Every session's approvals (each session's oldest first; pageOf orders them across sessions). */
	approvals(status?: Approval["status"]): Approval[] {
		return this.list().flatMap((s) => s.approvals.list(status));
	}

	/**
	 * Refuses new work (sessions, runs, resumes: 503 with Retry-After) and waits (at most `ms`) until
	 * no session is in the middle of something: SIGTERM lets runs settle before their sessions stop
	 * (cluster mode: hibernate and move).
	 */
	async drain(ms: number): Promise<void> {
		this.#closing = true;
		const busy = () => this.list().some((s) => s.hasProcess && !s.isStopping && !s.isQuiet);
		for (const deadline = Date.now() + ms; busy() && Date.now() < deadline; )
			await new Promise((r) => setTimeout(r, 50));
	}

	/**
	 * Stops every child (stdin end → SIGTERM → SIGKILL) and refuses new work. Persistent sessions
	 * end `stopped` and come back after a restart; the registry is written and its lock released.
	 */
	async shutdown(): Promise<void> {
		this.#closing = true;
		for (const timer of this.#timers) clearInterval(timer);
		for (const pooled of this.#inHand) pooled.kill("SIGKILL", true);
		await this.pool?.close();
		await Promise.all(this.list().map((s) => s.stop("shutdown")));
		await this.#cluster?.closing();
		// Nothing writes after this (a late exit event, a second shutdown): the store is gone.
		await this.#journal.close();
	}

	/** Last resort on process exit: no child may outlive the gateway unasked. Synchronous. */
	killAll(): void {
		for (const session of [...this.#sessions.values(), ...this.#inHand]) session.kill("SIGKILL", true);
		this.pool?.killAll();
	}
}
