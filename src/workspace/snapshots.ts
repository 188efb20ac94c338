import { existsSync } from "node:fs";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { type GitRepo, git, workOnDisk } from "./git.ts";

/** What a session's shadow repository remembers: the tree at its start and at each run's start and end. */
export interface Manifest {
	base?: string;
	runs: { runId: string; start: string; end?: string; settledAt?: string }[];
}

/** Runs remembered per session (the oldest go first; their trees stay in the repository until it is removed). */
export const maxRuns = 100;

/**
 * One session's snapshots: a shadow git repository under the data dir whose work tree is the
 * session's folder. A snapshot is `git add -A` into the shadow index and `git write-tree`: the
 * folder's content (as its .gitignore filters it) as a tree object; unchanged files cost a stat.
 * The manifest (trees by run) is a JSON file beside it. Everything on one session is serialized.
 */
export class Snapshots {
	readonly #dir: string;
	readonly #timeoutMs: number;
	#chain: Promise<unknown> = Promise.resolve();
	#manifest: Manifest | undefined;
	workTree: string;

	constructor(dir: string, workTree: string, timeoutMs: number) {
		this.#dir = dir;
		this.workTree = workTree;
		this.#timeoutMs = timeoutMs;
	}

	get repo(): GitRepo {
		return { gitDir: `${this.#dir}/git`, workTree: this.workTree };
	}

	/** `job` after every earlier job on this session. */
	serial<T>(job: () => Promise<T>): Promise<T> {
		const next = workOnDisk(this.#chain.then(job, job));
		this.#chain = next.catch(() => {});
		return next;
	}

	/** The tree of the folder as it is now. */
	snapshot(): Promise<string> {
		return this.serial(() => this.#snapshotNow());
	}

	async #snapshotNow(): Promise<string> {
		await this.#init();
		// A git killed at its deadline leaves its lock; nothing else uses this index (jobs are serial).
		await rm(`${this.#dir}/git/index.lock`, { force: true });
		const options = { timeoutMs: this.#timeoutMs };
		await git(this.repo, ["add", "--all", "--ignore-errors", "--", "."], options).catch((error) => {
			// --ignore-errors exits 1 after adding what it could read (an unreadable file, say).
			if (!String(error.message).includes("failed (1)")) throw error;
		});
		const { out } = await git(this.repo, ["write-tree"], options);
		return out.toString("utf8").trim();
	}

	async #init(): Promise<void> {
		if (existsSync(`${this.#dir}/git/HEAD`)) return;
		await mkdir(this.#dir, { recursive: true });
		await git({ gitDir: `${this.#dir}/git`, workTree: this.#dir }, ["init", "--quiet"], { timeoutMs: this.#timeoutMs });
	}

	async manifest(): Promise<Manifest> {
		if (this.#manifest) return this.#manifest;
		try {
			this.#manifest = JSON.parse(await readFile(`${this.#dir}/runs.json`, "utf8")) as Manifest;
		} catch {
			this.#manifest = { runs: [] };
		}
		return this.#manifest;
	}

	/** Changes the manifest and writes it (whole, atomically: a crash leaves the old one). */
	async update(change: (manifest: Manifest) => void): Promise<void> {
		const manifest = await this.manifest();
		change(manifest);
		if (manifest.runs.length > maxRuns) manifest.runs.splice(0, manifest.runs.length - maxRuns);
		await mkdir(this.#dir, { recursive: true });
		const temp = `${this.#dir}/runs.json.${process.pid}`;
		await writeFile(temp, JSON.stringify(manifest));
		await rename(temp, `${this.#dir}/runs.json`);
	}

	/** The session is gone: its repository too. */
	remove(): Promise<void> {
		return this.serial(() => rm(this.#dir, { recursive: true, force: true }));
	}
}
