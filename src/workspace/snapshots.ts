import { existsSync } from "node:fs";
import { mkdir, readFile, realpath, rename, rm, writeFile } from "node:fs/promises";
import type { Confinement } from "./confined.ts";
import { gitFifos } from "./fifo-scan.ts";
import { emptyFolder } from "./folder-dirs.ts";
import {
	assertObjectId,
	emptyTree,
	type GitRepo,
	git,
	objectId,
	repoUsage,
	unstaged,
	workOnDisk,
	writeShadowAttributes,
} from "./git.ts";
import { forgetRecentStat } from "./git-index.ts";
import { dropGitlinks } from "./gitlinks.ts";
import { sharedWritableInodes } from "./mapped-files.ts";
import { boundedUnreadable, checkedManifest, type Manifest, maxRuns } from "./snapshot-manifest.ts";
import { assertFits, defaultSnapshotLimits, keepOnly, type SnapshotLimits } from "./snapshot-space.ts";

/** Trees of the latest snapshots, kept by a prune though no manifest names them yet (a run's start). */
const recentKept = 16;

/**
 * One session's snapshots: a shadow git repository under the data dir whose work tree is the
 * session's folder. A snapshot is `git add --all --force` into the shadow index and `git write-tree`:
 * the folder's whole content (its .gitignore hides nothing) as a tree object; unchanged files cost a stat.
 * The manifest (trees by run) is a JSON file beside it. Everything on one session is serialized.
 */
export class Snapshots {
	readonly #dir: string;
	readonly #timeoutMs: number;
	readonly #limits: SnapshotLimits;
	#chain: Promise<unknown> = Promise.resolve();
	#manifest: Manifest | undefined;
	/** Once a git of a snapshot met its deadline, FIFOs are looked for first and covered (fifo-scan.ts). */
	#scanFifos = false;
	#covered: string[] = [];
	/** What the snapshot in progress could not read (snapshotSeen). */
	#unreadable: string[] = [];
	/** The index was checked for gitlinks since this process took the session (#dropGitlinks). */
	#gitlinksDropped = false;
	/** The latest snapshots' trees, newest last. */
	readonly #recent: string[] = [];
	/** Runs left the manifest since the last prune: their objects may go. */
	#dropped = false;
	/** Trees a prune keeps though the manifest does not name them (yet): a running run's start. */
	readonly pinned = new Set<string>();
	workTree: string;
	/** The session's process (its sandbox): the files its tree maps writable are read at every snapshot. */
	processRoot: number | undefined;
	/** How its gits run (confined.ts); absent: directly. */
	readonly #confine: Confinement | undefined;
	/** Aborted by remove(): a deleted session's snapshot in progress stops instead of being waited for. */
	readonly #gone = new AbortController();

	constructor(
		dir: string,
		workTree: string,
		timeoutMs: number,
		limits: Partial<SnapshotLimits> = {},
		confine?: Confinement,
	) {
		this.#confine = confine;
		this.#dir = dir;
		this.workTree = workTree;
		this.#timeoutMs = timeoutMs;
		this.#limits = { ...defaultSnapshotLimits, ...limits };
	}

	get repo(): GitRepo {
		return {
			gitDir: `${this.#dir}/git`,
			workTree: this.workTree,
			covered: this.#covered,
			confine: this.#confine,
			signal: this.#gone.signal,
		};
	}

	/** `job` after every earlier job on this session. */
	serial<T>(job: () => Promise<T>): Promise<T> {
		// Once removed, nothing more is written there (a snapshot that finished as the session went
		// would otherwise make its folder again and write its manifest after the rm).
		const guarded = () => (this.removed ? Promise.reject(new Error("the session is gone")) : job());
		return this.#serial(guarded);
	}

	#serial<T>(job: () => Promise<T>): Promise<T> {
		const next = workOnDisk(this.#chain.then(job, job));
		this.#chain = next.catch(() => {});
		return next;
	}

	/** The tree of the folder as it is now. */
	async snapshot(): Promise<string> {
		return (await this.snapshotSeen()).tree;
	}

	/**
	 * The tree, and the files git could not read for it (a tracked file replaced by a FIFO, say): in the tree as an
	 * earlier snapshot had them, or not at all if new, so an edit to them is not in this tree's diffs.
	 */
	snapshotSeen(): Promise<{ tree: string; unreadable: string[] }> {
		return this.serial(async () => {
			this.#unreadable = [];
			const tree = await this.#snapshotNow();
			return { tree, unreadable: this.#unreadable };
		});
	}

	async #snapshotNow(): Promise<string> {
		// A new session's own folder, empty, before its repository exists: the tree is git's empty
		// tree, known without git (a session created and deleted runs no git at all).
		if (!existsSync(`${this.#dir}/git/HEAD`) && emptyFolder(this.workTree)) return this.#taken(emptyTree);
		await this.#init();
		try {
			return await this.#attempt();
		} catch (error) {
			// A git met its deadline (a FIFO it waits on, say): once more, with FIFOs looked for first.
			if (this.#scanFifos || !String((error as Error).message).includes("took longer than")) throw error;
			this.#scanFifos = true;
			return await this.#attempt();
		}
	}

	async #attempt(): Promise<string> {
		// A git killed at its deadline leaves its lock; nothing else uses this index (jobs are serial).
		await rm(`${this.#dir}/git/index.lock`, { force: true });
		// After a git met its deadline, FIFOs git would read are covered (fifo-scan.ts).
		if (this.#scanFifos) this.#covered = await gitFifos(this.repo, this.#timeoutMs);
		const options = { timeoutMs: this.#timeoutMs };
		await this.#fits();
		await writeShadowAttributes(`${this.#dir}/git`);
		// --force: what the folder's .gitignore names is taken too (it hides nothing from "what changed").
		if (!this.#gitlinksDropped) await this.#dropGitlinks();
		// File times are kept to the nanosecond but git compares seconds: see git-index.ts. The
		// kernel stamps files from a clock that may lag this one by a tick (≤ 10 ms): 50 ms covers it.
		const addBegan = Math.floor((Date.now() - 50) / 1000);
		// Before the add: a mapping made after this shows by the change time of its first write.
		const mapped = this.processRoot === undefined ? undefined : sharedWritableInodes(this.processRoot);
		const added = await git(this.repo, ["add", "--all", "--force", "--ignore-errors", "--", "."], options).catch(
			(error) => {
				// --ignore-errors exits 1 after adding what it could read (an unreadable file, say).
				// Exit 1 read off the message's head: its tail is git's stderr, which names the agent's files.
				if (!String(error.message).startsWith("git add failed (1):")) throw error;
				return { stderr: String(error.message), failed: true };
			},
		);
		// The stderr kept is cut at 4 KiB: a cut one may hide the warning, so it counts as one too.
		if (added.stderr.includes("embedded git repository") || added.stderr.length >= 4096) await this.#dropGitlinks();
		// What an add that could not read everything left out (at most 100 paths).
		this.#unreadable = "failed" in added ? boundedUnreadable(await unstaged(this.repo, this.#timeoutMs)) : [];
		await forgetRecentStat(this.repo, addBegan, this.#timeoutMs, mapped);
		const { out } = await git(this.repo, ["write-tree"], options);
		const tree = out.toString("utf8").trim();
		assertObjectId(tree);
		return this.#taken(tree);
	}

	#taken(tree: string): string {
		this.#recent.push(tree);
		if (this.#recent.length > recentKept) this.#recent.shift();
		return tree;
	}

	/** Refuses a snapshot that would take the repository past its cap (assertFits). */
	#fits(): Promise<void> {
		return assertFits(this.repo, this.#limits.maxBytes, this.#timeoutMs, this.#dropped, () => this.#prune());
	}

	/** After a run settled: packs and prunes once the loose objects pass their threshold. */
	pruneIfDue(): Promise<void> {
		return this.serial(async () => {
			if (!existsSync(`${this.#dir}/git/HEAD`)) return;
			const usage = await repoUsage(this.repo, this.#timeoutMs);
			if (usage.looseBytes > this.#limits.pruneLooseBytes || usage.looseObjects > this.#limits.pruneLooseObjects)
				await this.#prune();
		});
	}

	/**
	 * Keeps only what the trees still needed reach — the session's start, the kept runs' starts and
	 * ends, running runs' starts, the latest snapshots — each held by a ref
	 * `refs/keep/<tree>`; then everything reachable (and the shadow index) is packed into one pack,
	 * with deltas, and the rest removed.
	 */
	async #prune(): Promise<void> {
		const manifest = await this.manifest();
		const wanted = new Set(
			[manifest.base, ...manifest.runs.flatMap((r) => [r.start, r.end]), ...this.#recent, ...this.pinned].filter(
				(tree): tree is string => typeof tree === "string" && objectId.test(tree),
			),
		);
		await keepOnly(this.repo, wanted, this.#timeoutMs);
		this.#dropped = false;
	}

	async #dropGitlinks(): Promise<void> {
		await dropGitlinks(this.repo, this.#timeoutMs);
		this.#gitlinksDropped = true;
	}

	async #init(): Promise<void> {
		if (existsSync(`${this.#dir}/git/HEAD`)) return;
		// The git dir exists before git runs: a confined git is given it to write (confined.ts).
		await mkdir(`${this.#dir}/git`, { recursive: true });
		const workTree = await realpath(this.#dir);
		await git({ gitDir: `${this.#dir}/git`, workTree }, ["init", "--quiet"], { timeoutMs: this.#timeoutMs });
	}

	async manifest(): Promise<Manifest> {
		if (this.#manifest) return this.#manifest;
		try {
			this.#manifest = checkedManifest(JSON.parse(await readFile(`${this.#dir}/runs.json`, "utf8")));
		} catch {
			this.#manifest = { runs: [] };
		}
		return this.#manifest;
	}

	/** Changes the manifest and writes it (whole, atomically: a crash leaves the old one). */
	async update(change: (manifest: Manifest) => void): Promise<void> {
		const manifest = await this.manifest();
		change(manifest);
		if (manifest.runs.length > maxRuns) {
			manifest.runs.splice(0, manifest.runs.length - maxRuns);
			this.#dropped = true;
		}
		await mkdir(this.#dir, { recursive: true });
		const temp = `${this.#dir}/runs.json.${process.pid}`;
		await writeFile(temp, JSON.stringify(manifest));
		await rename(temp, `${this.#dir}/runs.json`);
	}

	/** Whether remove() was called: what fails after it failed because the session went. */
	get removed(): boolean {
		return this.#gone.signal.aborted;
	}

	/**
	 * The session is gone: its repository too. A snapshot in progress (a new session's first one,
	 * say: four gits) stops after the git it is running rather than being finished and thrown away,
	 * so DELETE does not wait for all of it.
	 */
	remove(): Promise<void> {
		this.#gone.abort();
		return this.#serial(() => rm(this.#dir, { recursive: true, force: true }));
	}
}
