// Over 300 lines on purpose: the registry is where the cross-session rules meet (session
// and live-process caps, LRU hibernation, idle reaping, resume, the warm pool, the hub, and in
// cluster mode taking sessions over, giving them back and dropping them) and each of them needs
// the same map of sessions. The disk is journal.ts over a SessionStore
// (session-store.ts; server.ts opens SQLite or PostgreSQL from src/store/), spawning is spawn.ts, paths are guard.ts.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync } from "node:fs";
import type { Logger } from "pino";
import type { Config } from "../config.ts";
import { GatewayError } from "../errors.ts";
import { pickLimits, sessionLimitKeys } from "../limits.ts";
import { type Dialect, dialectOf, type PiPackage, piPackageOf } from "../pi/dialect.ts";
import type { UiRequest } from "../pi/protocol.ts";
import type { Approval } from "./approvals.ts";
import { type Area, areaOf } from "./areas.ts";
import type { LoggedEvent } from "./event-log.ts";
import { guardCommand, guardResume } from "./guard.ts";
import { Journal, type StoreHealth, unsafeSeqMargin } from "./journal.ts";
import { type Caller, resumeFile } from "./resume-lookup.ts";
import { FolderRetention, ownFolderOf } from "./retention.ts";
import { agentDir } from "./sandbox.ts";
import { Session, type SessionInit, type SessionLimits, type SpawnCommand } from "./session.ts";
import { localSessionFile, ownFolder, piSessionDir } from "./session-files.ts";
import type { OpenStore, SessionStore, StoredSession } from "./session-store.ts";
import type { UncleanStop } from "./session-types.ts";
import { type CreateSessionBody, isInside, planSpawn } from "./spawn.ts";
import { agentDirStamp, type Pooled, removeEmpty, WarmPools } from "./warm-pool.ts";

export type { Caller } from "./resume-lookup.ts";

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

/** A stored session a node takes over: how far its event numbers may have gone, and its dead dialogs. */
export interface Takeover {
	/** The previous owner released it (its last seq is exact); else numbers skip a margin. */
	clean: boolean;
}

const defaultBody: CreateSessionBody = { persist: true };

/** Commands that start or join a run: refused while the gateway drains (SIGTERM). */
const runCommands = new Set(["prompt", "steer", "follow_up"]);

/** New work while the gateway stops: 503, retried once it (or another node) is back. */
const shuttingDown = () =>
	new GatewayError(503, "shutting_down", "The gateway is shutting down; retry after Retry-After seconds", {
		retryAfter: 5,
	});

/** What an unclean stop left of a stored session: whether its pi process and its run died then. */
const uncleanStop = (record: StoredSession, why: string): UncleanStop => ({
	why,
	live: record.live === true,
	...(record.runId !== undefined && { runId: record.runId }),
});

const anyCaller: Caller = { admin: true, sees: () => true };
/** Events after which a session's record is written at once (what a node taking it over must know). */
const journalledAtOnce = new Set([
	"approval_requested",
	"approval_resolved",
	"tool_call_requested",
	"tool_call_resolved",
	"agent_start",
]);
const newSessionId = () => `ses_${randomBytes(9).toString("base64url")}`;

/** A create request a warm-pool process can serve: nothing but (optionally) a name. */
export function isDefaultRequest(body: CreateSessionBody): boolean {
	return Object.entries(body).every(([key, value]) => (key === "persist" ? value === true : key === "name"));
}

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
	readonly #options = new Map<string, CreateSessionBody>();
	readonly #waking = new Map<string, Promise<void>>();
	readonly #hub = new Set<HubListener>();
	readonly #journal: Journal;
	#timers: NodeJS.Timeout[] = [];
	/** Process slots promised to a start that waits for its LRU victim to exit. */
	#reserved = 0;
	#closing = false;
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
		mkdirSync(piSessionDir(config), { recursive: true });
		// Sessions without cwd get folders of their own in it (the default root lives in the data dir),
		// and a warm pi is bound to an area in it before any session: an operator's new root is made too.
		mkdirSync(config.workspaceRoot, { recursive: true });
		if (config.warmPool > 0)
			this.pool = new WarmPools(config.warmPool, areaOf(config, "admin", true), {
				start: (area, spawned) => this.#startPooled(area, spawned),
				logger,
				room: () => this.liveCount < this.#config.maxLiveSessions,
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
			const restored = {
				createdAt: new Date(record.createdAt),
				lastActivityAt: record.lastActivityAt,
				lastSeq: record.lastSeq + margin,
				piState: record.piState,
				unclean: margin > 0 ? uncleanStop(record, "the gateway stopped uncleanly (SIGKILL, a crash)") : undefined,
			};
			const session = this.#register(record.id, record.options, record.cwd, { restored, name: record.name });
			if (record.budget) session.budget.restore(record.budget);
			this.#journal.save(session);
		}
		if (this.#sessions.size > 0) this.#logger.info({ sessions: this.#sessions.size }, "sessions restored (stopped)");
		const idle = this.#config.idleTimeoutMs;
		this.#timers.push(setInterval(() => this.#journal.flush(), flushEveryMs).unref());
		if (idle > 0) this.#timers.push(setInterval(() => this.#reap(), Math.min(Math.max(idle / 4, 50), 30_000)).unref());
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
		let live = this.#reserved + (this.pool?.size ?? 0);
		for (const s of this.#sessions.values()) if (s.hasProcess && !s.isStopping) live++;
		return live;
	}

	limits(): SessionLimits {
		return pickLimits(this.#config, sessionLimitKeys);
	}

	#quietDialogs: ((sessionId: string, request: UiRequest) => Promise<unknown> | undefined) | undefined;
	/** Dialogs the gateway answers itself (Session.quietDialog): the change tracker's snapshot gate. */
	setQuietDialogs(handler: (sessionId: string, request: UiRequest) => Promise<unknown> | undefined): void {
		this.#quietDialogs = handler;
	}

	/** Cluster mode: the registry asks before starting pi and reports every process (src/cluster/). */
	setCluster(hooks: ClusterHooks): void {
		this.#cluster = hooks;
	}

	/** `caller` decides which sessions a `resume` may find (default: an admin, who sees them all). */
	async create(body: CreateSessionBody, caller: Caller = anyCaller): Promise<Session> {
		if (this.#closing) throw shuttingDown();
		await this.#cluster?.assertCanCreate();
		if (this.#sessions.size >= this.#config.maxSessions) {
			throw new GatewayError(
				429,
				"too_many_sessions",
				`At most ${this.#config.maxSessions} sessions (stopped ones count)`,
			);
		}
		const resume = body.resume ? this.#resumeFile(body.resume, caller) : undefined;
		this.#assertStorable();
		// A warm child was started in one area's folder, as a cold one of that area: only for its callers.
		const area = caller.area ?? areaOf(this.#config, "admin", true);
		const plain = isDefaultRequest(body) && resume === undefined;
		const warm = plain ? await this.pool?.take(area) : undefined;
		if (warm) return this.#adoptPooled(warm, body);
		const id = newSessionId();
		const plan = planSpawn(this.#config, body, { id, resume, area: caller.area });
		// Registered before start so that shutdown() also stops a child that is still starting.
		const session = this.#register(id, body, plan.cwd);
		try {
			await this.#launch(session, plan);
		} catch (error) {
			this.#forget(id);
			throw error;
		}
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

	/** The file `resume` names among those `caller` may continue (resume-lookup.ts). */
	#resumeFile(resume: string, caller: Caller): string {
		const held = [...this.#sessions].map(([id, session]) => ({ id, session, resume: this.#options.get(id)?.resume }));
		const file = resumeFile(this.#config, resume, caller, held);
		guardResume(this.#config, file);
		return file;
	}

	/** The registered session whose own folder of pi session files is `folder`, if any. */
	#folderHolder(folder: string | undefined, except?: string): Session | undefined {
		if (folder === undefined) return undefined;
		for (const [id, session] of this.#sessions)
			if (id !== except && ownFolder(this.#config, session.piState.sessionFile) === folder) return session;
		return undefined;
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
		// pi writes its file only once there is something to keep, so a file never seen may just not
		// exist yet; one seen and gone now would make pi start an empty conversation under the old id.
		if (file && session.piState.fileSeen && !existsSync(file)) {
			throw new GatewayError(
				409,
				"session_file_missing",
				`Session ${session.id}'s pi session file ${file} is gone; its conversation cannot be continued (DELETE it, or restore the file)`,
			);
		}
		// Two sessions never share a folder (switch and resume keep to their own); a record that names
		// an older session's folder (written before that held) does not start on it.
		const holder = this.#folderHolder(ownFolder(this.#config, file), session.id);
		if (holder && holder.createdAt.getTime() <= session.createdAt.getTime()) {
			throw new GatewayError(
				409,
				"session_file_in_use",
				`Session ${session.id}'s pi session file lies in another session's folder; it cannot be continued (DELETE it)`,
			);
		}
		const options = this.#options.get(session.id) as CreateSessionBody;
		await this.#launch(session, planSpawn(this.#config, options, { id: session.id, restore: file, cwd: session.cwd }));
		this.#logger.info({ sessionId: session.id, pid: session.pid }, "session resumed");
		this.#journal.save(session);
	}

	/** Starts a child within the live-process cap: past it, the least recently used idle session hibernates first. */
	async #launch(session: Session, plan: SpawnCommand): Promise<void> {
		// A pooled process gives its slot up before anyone's session is hibernated for it.
		if (this.liveCount >= this.#config.maxLiveSessions && this.pool) {
			this.#reserved++;
			try {
				await this.pool.shed();
			} finally {
				this.#reserved--;
			}
		}
		if (this.liveCount >= this.#config.maxLiveSessions) {
			const victim = [...this.#sessions.values()]
				.filter((s) => s.canHibernate)
				.sort((a, b) => a.lastActivityAt - b.lastActivityAt)[0];
			if (!victim) {
				throw new GatewayError(
					429,
					"too_many_live_sessions",
					`All ${this.#config.maxLiveSessions} pi processes are busy and none is idle enough to hibernate`,
				);
			}
			this.#reserved++;
			try {
				await victim.stop("lru");
			} finally {
				this.#reserved--;
			}
			if (this.#closing) throw shuttingDown();
		}
		// Same tick as the reservation's release: the child counts as live before anyone else looks.
		await session.start(plan);
		this.#cluster?.started(session);
	}

	/** A pool process: a session of `area` started with the default options, not yet in the registry. */
	async #startPooled(area: Area, spawned: (session: Session) => void): Promise<Pooled> {
		const id = newSessionId();
		const plan = planSpawn(this.#config, defaultBody, { id, area });
		const session = this.#build(id, defaultBody, plan.cwd);
		spawned(session);
		const sessionDir = plan.args[plan.args.indexOf("--session-dir") + 1];
		const folders = [plan.cwd, ...(sessionDir && plan.args.includes("--session-dir") ? [sessionDir] : [])];
		// Its own folder only: an area itself (--default-cwd root) is never removed.
		const own = this.#config.defaultCwd === "own" ? folders : folders.slice(1);
		try {
			await session.start(plan);
		} catch (error) {
			removeEmpty(own);
			throw error;
		}
		// Stamped once pi is up: what it wrote there itself at start is in the stamp.
		const dir = agentDir(plan.env);
		return { session, folders: own, agentDir: { path: dir, stamp: agentDirStamp(dir) } };
	}

	/** A pooled session becomes the caller's: registered, named, saved. */
	async #adoptPooled(session: Session, body: CreateSessionBody): Promise<Session> {
		// Started before the caller asked: listed (and paged) by when it was created, not spawned.
		session.createdAt = new Date();
		this.#adopt(session, body);
		this.#cluster?.started(session);
		if (body.name) {
			session.name = body.name;
			const named = await session.request({ type: "set_session_name", name: body.name });
			if (!named.success)
				this.#logger.warn({ sessionId: session.id, error: named.error }, "warm session: naming failed");
		}
		this.#journal.save(session);
		return session;
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
		const session = new Session({
			id,
			name: extra.name ?? options.name,
			cwd,
			persist: options.persist,
			clientTools: options.clientTools?.map((tool) => tool.name),
			limits: this.limits(),
			dialect: this.dialect,
			logger: this.#logger,
			restored: extra.restored,
			// Its own folder is the one its file lies in: switch, fork and clone keep to it. Draining, runs
			// in progress settle and no new one starts.
			guard: (command) => {
				if (this.#closing && runCommands.has(command.type)) throw shuttingDown();
				// A session past its budget starts no run (budget.ts): 409 before pi.
				if (runCommands.has(command.type)) this.#sessions.get(id)?.budget.assertAvailable(id);
				return guardCommand(
					this.#config,
					command,
					ownFolder(this.#config, this.#sessions.get(id)?.piState.sessionFile),
					this.#sessions.get(id)?.cwd,
				);
			},
			wake: async (s) => {
				// Without auto-resume the command meets 409 session_stopped.
				if (this.#config.autoResume) await this.resume(s.id);
			},
		});
		session.quietDialog = (request) => this.#quietDialogs?.(id, request);
		return session;
	}

	#adopt(session: Session, options: CreateSessionBody): Session {
		const id = session.id;
		if (options.budget) session.budget.limits = options.budget;
		this.#sessions.set(id, session);
		this.#options.set(id, options);
		session.events.subscribe((event) => {
			for (const listener of this.#hub) listener(id, event);
			if (event.type === "session_exit") {
				this.#cluster?.exited(id);
				this.#journal.save(session);
			}
			// Written at once: a node taking the session over must know which dialogs died with this one,
			// and a gateway started after an unclean stop which run did (its id is set by its start).
			if (journalledAtOnce.has(event.type)) this.#journal.save(session);
			// Once the session has taken the settle in (it clears the run after its listeners).
			if (event.type === "agent_settled") queueMicrotask(() => this.#journal.save(session));
			// The conversation leaves this node's disk at every settled run and when pi stops
			// (hibernation, shutdown), so another disk can continue it.
			if (event.type === "agent_settled" || event.type === "session_exit") this.#journal.saveConversation(session);
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
					: `was stopped at ${gone.at} after ${this.#config.idleTimeoutMs} ms without activity`;
			throw new GatewayError(410, "session_gone", `Session ${id} was ephemeral (persist:false) and ${why}`);
		}
		throw new GatewayError(404, "session_not_found", `No session ${id}`);
	}

	list(): Session[] {
		return [...this.#sessions.values()];
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
		const piState = { ...record.piState };
		if (piState.sessionFile) piState.sessionFile = localSessionFile(this.#config, piState.sessionFile);
		if (isInside(this.#config.workspaceRoot, record.cwd)) mkdirSync(record.cwd, { recursive: true });
		const restored = {
			createdAt: new Date(record.createdAt),
			lastActivityAt: record.lastActivityAt,
			lastSeq: record.lastSeq + (takeover.clean ? 0 : unsafeSeqMargin),
			piState,
			unclean: takeover.clean ? undefined : uncleanStop(record, "the node that ran the session died"),
		};
		const session = this.#register(record.id, record.options, record.cwd, { restored, name: record.name });
		if (record.budget) session.budget.restore(record.budget);
		if (!takeover.clean && record.pendingApprovals) session.approvals.markLost(record.pendingApprovals);
		if (!takeover.clean && record.pendingToolCalls) session.toolCalls.markLost(record.pendingToolCalls);
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
		this.#sessions.delete(id);
		this.#options.delete(id);
		if (row === "keep the row") this.#journal.drop(id);
		else this.#journal.forget(id);
	}

	/** Idle past the limit: a persistent session hibernates (`stopped`), an ephemeral one is reaped. */
	#reap(): void {
		const cutoff = Date.now() - this.#config.idleTimeoutMs;
		for (const [id, session] of this.#sessions) {
			if (this.#closing || session.lastActivityAt > cutoff || !session.isQuiet || this.#waking.has(id)) continue;
			if (session.resumable) {
				void session.stop("idle");
				continue;
			}
			void session.stop("idle").then(() => {
				this.#forget(id);
				this.#journal.bury(id, "idle");
			});
		}
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
		await this.pool?.close();
		await Promise.all(this.list().map((s) => s.stop("shutdown")));
		await this.#cluster?.closing();
		// Nothing writes after this (a late exit event, a second shutdown): the store is gone.
		await this.#journal.close();
	}

	/** Last resort on process exit: no child may outlive the gateway unasked. Synchronous. */
	killAll(): void {
		for (const session of this.#sessions.values()) session.kill("SIGKILL", true);
		this.pool?.killAll();
	}
}
