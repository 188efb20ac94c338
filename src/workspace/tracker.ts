// Over 300 lines on purpose: the tracker is where a session's snapshots meet its runs (the first
// one, the pre-run one — awaited, or held against pi's first tool call by the snapshot gate — the
// settle, and reads), all over the same few maps; git's work is snapshots.ts, diffs are changes.ts.
import type { Logger } from "pino";
import { eventJson, type LoggedEvent } from "../sessions/events/index.ts";
import { GatewayError } from "../shared/errors.ts";
import { type ChangeLimits, type ChangeStatus, changedPaths, changesBetween } from "./changes.ts";
import type { Confinement } from "./confined.ts";
import { hasGit } from "./git.ts";
import type { RunArchive } from "./run-archive.ts";
import { maxRuns } from "./snapshot-manifest.ts";
import { SnapshotLimitError } from "./snapshot-space.ts";
import { Snapshots } from "./snapshots.ts";

/** What the tracker needs of a session: its folder, and a way to say something on its event stream. */
export interface TrackedSession {
	cwd: string;
	/** Its pi's process (the sandbox's, when sandboxed), while it runs. */
	pid?: number | undefined;
	emit(type: string, fields: Record<string, unknown>): void;
}

export interface TrackerOptions {
	dataDir: string;
	enabled: boolean;
	snapshotTimeoutMs: number;
	/** Bytes one session's shadow repository may hold (--workspace-max-snapshot-bytes). */
	maxSnapshotBytes?: number;
	limits: Omit<ChangeLimits, "timeoutMs">;
	/** Cluster mode: settled runs' changes kept in PostgreSQL, so they outlive a move to another node. */
	archive?: RunArchive;
	/** How git runs on the agent's folders (confined.ts); absent: directly. */
	confine?: Confinement;
	/** pi holds a run's first tool call until its snapshots are taken (snapshot-gate.ts): prompts need not wait. */
	gated?: boolean;
}

/** Paths a run's summary (the `run_changes` event, the run.settled webhook) names at most. */
export const maxSummaryPaths = 100;

const safeId = /^[\w-]{1,100}$/;

/** A snapshot's tree, or why there is none (`limit`: refused by --workspace-max-snapshot-bytes). */
interface Snap {
	tree?: string;
	error?: string;
	limit?: boolean;
	/** Files git could not read for this tree (snapshots.ts snapshotSeen): their edits are not in it. */
	unreadable?: string[];
}

/**
 * Where a session's shadow repository and run manifest live: a folder of the data dir that no
 * workspace root can be or contain (config.ts refuses an overlap), so the agent, who writes its own
 * folder, never writes a byte git or the gateway reads back as configuration.
 */
export const snapshotDir = (dataDir: string, id: string) => `${dataDir}/snapshots/${id}`;

/**
 * What changed in each session's folder: a snapshot when the session is first seen (its start),
 * before each prompt that may start a run, and when each run settles; `run_changes` on the
 * session's stream names what the run changed. Fed by the registry's event hub and by the prompt
 * route (a snapshot before the prompt reaches pi: pi's first tool call may come within
 * milliseconds of its answer).
 */
export class ChangeTracker {
	readonly #options: TrackerOptions;
	readonly #sessionOf: (id: string) => TrackedSession | undefined;
	readonly #logger: Logger;
	readonly #repos = new Map<string, Snapshots>();
	/** The tree taken just before a prompt was sent, until pi says whether it started a run. */
	readonly #beforePrompt = new Map<string, Promise<Snap>>();
	/** The run in progress per session, and its start tree. */
	readonly #current = new Map<string, { runId: string; start: Promise<Snap> }>();
	/** Each session's first snapshot: "since the session started" means since this one. */
	readonly #base = new Map<string, Promise<unknown>>();
	/** Settling runs' end snapshots, by session, so a read right after a run sees them. */
	readonly #settling = new Map<string, Promise<void>>();

	constructor(options: TrackerOptions, sessionOf: (id: string) => TrackedSession | undefined, logger: Logger) {
		this.#options = options;
		this.#sessionOf = sessionOf;
		this.#logger = logger;
	}

	get enabled(): boolean {
		return this.#options.enabled && hasGit();
	}

	#repo(id: string): Snapshots | undefined {
		const session = this.#sessionOf(id);
		if (!session || !safeId.test(id)) return undefined;
		let repo = this.#repos.get(id);
		if (!repo) {
			const limits = this.#options.maxSnapshotBytes ? { maxBytes: this.#options.maxSnapshotBytes } : {};
			repo = new Snapshots(
				snapshotDir(this.#options.dataDir, id),
				session.cwd,
				this.#options.snapshotTimeoutMs,
				limits,
				this.#options.confine,
			);
			this.#repos.set(id, repo);
		}
		// A switch to a session file of another folder moves the session's folder.
		repo.workTree = session.cwd;
		repo.processRoot = session.pid;
		return repo;
	}

	/** A snapshot, or why it failed (logged): a run without one has no changes to show. */
	async #snap(id: string): Promise<Snap> {
		const repo = this.#repo(id);
		if (!repo || !this.enabled) return { error: "no snapshot of the folder" };
		try {
			const { tree, unreadable } = await repo.snapshotSeen();
			const manifest = await repo.manifest();
			if (!manifest.base)
				await repo.serial(() =>
					repo.update((m) => {
						m.base ??= tree;
					}),
				);
			return unreadable.length > 0 ? { tree, unreadable } : { tree };
		} catch (error) {
			if (error instanceof SnapshotLimitError) {
				this.#logger.warn({ sessionId: id }, error.message);
				return { error: error.message, limit: true };
			}
			if (repo.removed) this.#logger.debug({ sessionId: id }, "workspace snapshot stopped: the session was deleted");
			else this.#logger.warn({ sessionId: id, err: error }, "workspace snapshot failed");
			return { error: "no snapshot of the folder" };
		}
	}

	/**
	 * The session's first snapshot, taken once (it starts when the session does): every request
	 * that may change the folder (an upload, a prompt, bash) waits for it, so none slips into it.
	 */
	async ensureBase(id: string): Promise<void> {
		// Only sessions this node holds: a made-up id leaves nothing behind.
		if (!this.enabled || !this.#sessionOf(id)) return;
		let base = this.#base.get(id);
		if (!base) {
			base = this.#snap(id);
			this.#base.set(id, base);
		}
		await base;
	}

	/** Whether prompts go to pi at once, their snapshots held against the run's first tool call instead. */
	get gated(): boolean {
		return this.enabled && this.#options.gated === true;
	}

	/**
	 * Before a prompt goes to pi: the folder as the run it may start finds it. Gated, the snapshot is
	 * only started (the session's first one too, if it has none yet): the prompt goes to pi at once,
	 * and pi's first tool call waits for gate().
	 */
	async beforePrompt(id: string): Promise<void> {
		if (!this.enabled || this.#current.has(id)) return;
		// The last run's run_changes first: a prompt sent at its agent_settled would otherwise find
		// that event at the head of its own stream (settling takes a few gits).
		await this.#settling.get(id);
		if (this.gated) {
			// Started once the prompt is on its way to pi (the gits run off the event loop, tool-spawner.ts;
			// their jobs' file reads and writes do not).
			const later = new Promise<Snap>((resolve) =>
				setImmediate(() => {
					void this.ensureBase(id);
					resolve(this.#snap(id));
				}),
			);
			this.#beforePrompt.set(id, later);
			return;
		}
		const tree = this.#snap(id);
		this.#beforePrompt.set(id, tree);
		await tree;
	}

	/** The snapshot gate's answer: once the session's first snapshot and its run's start snapshot are taken. */
	async gate(id: string): Promise<void> {
		if (!this.enabled) return;
		await Promise.all([this.#base.get(id), this.#beforePrompt.get(id), this.#current.get(id)?.start]);
	}

	/** The hub's listener: runs start at pi's `started` answer and end at `agent_settled`. */
	onEvent(id: string, event: LoggedEvent): void {
		if (!this.enabled) return;
		if (event.type === "session_status" && !this.#base.has(id)) void this.ensureBase(id);
		else if (event.type === "response") {
			const response = eventJson<{ command?: string; id?: string; success?: boolean; data?: { disposition?: string } }>(
				event,
			);
			if (response.command !== "prompt" || !response.success || !response.id) return;
			const before = this.#beforePrompt.get(id);
			this.#beforePrompt.delete(id);
			if (response.data?.disposition !== "started") return;
			const start = before ?? this.#snap(id);
			this.#current.set(id, { runId: response.id, start });
			// Its start tree outlives any prune until the run is in the manifest.
			void start.then((snap) => snap.tree && this.#repos.get(id)?.pinned.add(snap.tree));
		} else if (event.type === "agent_settled") {
			const run = this.#current.get(id);
			this.#current.delete(id);
			if (run) this.#settling.set(id, this.#settle(id, run));
		}
	}

	async #settle(id: string, run: { runId: string; start: Promise<Snap> }): Promise<void> {
		const session = this.#sessionOf(id);
		const repo = this.#repo(id);
		let summary: { files: { path: string; status: ChangeStatus }[]; truncated: boolean } | undefined;
		let error: string | undefined;
		let unreadable: string[] | undefined;
		try {
			const [first, last] = [await run.start, await this.#snap(id)];
			unreadable = last.unreadable;
			const [start, end] = [first.tree, last.tree];
			if (!repo || !start || !end) {
				const limit = [first, last].find((snap) => snap.limit);
				// A refused run is remembered as such: GET …/changes?runId= says why it has no changes.
				if (repo && limit)
					await repo.serial(() =>
						repo.update((m) => {
							m.runs = m.runs.filter((r) => r.runId !== run.runId);
							m.runs.push({ runId: run.runId, error: limit.error, settledAt: new Date().toISOString() });
						}),
					);
				throw new Error(limit?.error ?? first.error ?? last.error ?? "no snapshot of the folder");
			}
			await repo.serial(() =>
				repo.update((m) => {
					m.runs = m.runs.filter((r) => r.runId !== run.runId);
					m.runs.push({
						runId: run.runId,
						start,
						end,
						settledAt: new Date().toISOString(),
						...(unreadable && { unreadable }),
					});
				}),
			);
			summary = await changedPaths(
				repo.repo,
				start,
				end,
				{ timeoutMs: this.#options.snapshotTimeoutMs },
				maxSummaryPaths,
			);
			await this.#archive(id, run.runId, repo, start, end, unreadable);
			repo.pinned.delete(start);
			await repo
				.pruneIfDue()
				.catch((error) => this.#logger.warn({ sessionId: id, err: error }, "pruning the shadow repository failed"));
		} catch (caught) {
			error = caught instanceof Error ? caught.message : String(caught);
		}
		session?.emit("run_changes", {
			runId: run.runId,
			files: summary?.files ?? null,
			truncated: summary?.truncated ?? false,
			...(unreadable && { unreadable }),
			...(error ? { error } : {}),
		});
	}

	/** Cluster mode: the run's changes into PostgreSQL before its run_changes says it settled. */
	async #archive(
		id: string,
		runId: string,
		repo: Snapshots,
		start: string,
		end: string,
		unreadable: string[] | undefined,
	): Promise<void> {
		const archive = this.#options.archive;
		// A session deleted meanwhile: forget() cleared its runs from the database already.
		if (!archive || repo.removed) return;
		try {
			const limits = { ...this.#options.limits, timeoutMs: this.#options.snapshotTimeoutMs };
			const changes = await changesBetween(repo.repo, start, end, limits);
			await archive.save(id, runId, { runId, ...changes, ...(unreadable && { unreadable }) });
		} catch (error) {
			this.#logger.warn({ sessionId: id, runId, err: error }, "a run's changes could not be kept in the database");
		}
	}

	/** What changed since the session started (no `runId`) or in one settled or running run. */
	async changes(id: string, runId?: string) {
		if (!this.enabled)
			throw new GatewayError(
				501,
				"changes_unavailable",
				"Change tracking is off (--no-workspace-changes) or git is not on PATH",
			);
		await this.#settling.get(id);
		const repo = this.#repo(id);
		const gone = () => new GatewayError(404, "session_not_found", `No session ${id}`);
		if (!repo) throw gone();
		try {
			return await this.#changes(id, repo, runId);
		} catch (error) {
			// Deleted while its diff ran (its repository went under git): the session is what is missing.
			if (repo.removed) throw gone();
			throw error;
		}
	}

	async #changes(id: string, repo: Snapshots, runId: string | undefined) {
		const limits = { ...this.#options.limits, timeoutMs: this.#options.snapshotTimeoutMs };
		const running = this.#current.get(id);
		if (runId !== undefined && running?.runId !== runId) {
			const run = (await repo.manifest()).runs.find((r) => r.runId === runId);
			if (run?.error) throw new GatewayError(507, "snapshot_limit", run.error);
			if (run?.start && run.end)
				return {
					runId,
					...(await changesBetween(repo.repo, run.start, run.end, limits)),
					...(run.unreadable && { unreadable: run.unreadable }),
				};
			// Settled on another node before the session moved here (cluster mode).
			const archive = this.#options.archive;
			const kept = archive && (await archive.load(id, runId));
			if (kept) return kept as Awaited<ReturnType<typeof changesBetween>> & { runId: string };
			throw new GatewayError(
				404,
				"run_not_found",
				`No settled run ${runId} in session ${id} (the last ${maxRuns} are kept)`,
			);
		}
		const now = await this.#snap(id);
		const start = runId !== undefined ? await running?.start : undefined;
		const from = runId !== undefined ? start?.tree : (await repo.manifest()).base;
		const limit = [now, start].find((snap) => snap?.limit);
		if (limit) throw new GatewayError(507, "snapshot_limit", limit.error as string);
		if (!from || !now.tree)
			throw new GatewayError(503, "snapshot_failed", "The folder could not be snapshotted; try again", {
				retryAfter: 1,
			});
		return {
			runId: runId ?? null,
			...(await changesBetween(repo.repo, from, now.tree, limits)),
			...(now.unreadable && { unreadable: now.unreadable }),
		};
	}

	/** The session was deleted: its shadow repository goes too. */
	async forget(id: string): Promise<void> {
		const repo =
			this.#repos.get(id) ??
			(safeId.test(id) ? new Snapshots(snapshotDir(this.#options.dataDir, id), "/", 1000) : undefined);
		this.#repos.delete(id);
		this.#current.delete(id);
		this.#base.delete(id);
		this.#beforePrompt.delete(id);
		this.#settling.delete(id);
		await repo?.remove();
		await this.#options.archive?.forget(id).catch(() => {});
	}
}
