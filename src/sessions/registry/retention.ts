import { execFile } from "node:child_process";
import { existsSync, lstatSync, readFileSync, realpathSync } from "node:fs";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { promisify } from "node:util";
import type { Logger } from "pino";
import type { Config } from "../../config/config.ts";
import { isInside } from "../../shared/paths.ts";

const run = promisify(execFile);

/** A deleted session's own folder, kept until `deletedAt` + --workspace-retention-days. */
interface Kept {
	id: string;
	path: string;
	deletedAt: string;
}

const dayMs = 24 * 60 * 60 * 1000;

/**
 * The folder the gateway made for a session created without `cwd` (`<area>/<session id>`), or
 * undefined: a folder the client named, the workspace root (or an area) shared under
 * `--default-cwd root`, or a folder the session moved to are never the gateway's to remove.
 */
export function ownFolderOf(config: Config, id: string, namedCwd: string | undefined, cwd: string): string | undefined {
	if (namedCwd !== undefined || basename(cwd) !== id) return undefined;
	let root: string;
	try {
		root = realpathSync(config.workspaceRoot);
	} catch {
		return undefined;
	}
	return isInside(root, dirname(cwd)) ? cwd : undefined;
}

/**
 * Deleted sessions' own folders: DELETE keeps a session's folder (the files are the user's), and
 * after --workspace-retention-days a sweep — at start and then periodically — removes it, unless a
 * session still works in it (or in a folder inside it). The list is a JSON file of the data dir,
 * this node's like the folders themselves; `?purge=true` removes a folder at once.
 */
export class FolderRetention {
	readonly #config: Config;
	readonly #logger: Logger;
	readonly #file: string;
	#kept: Kept[] | undefined;
	#timer: NodeJS.Timeout | undefined;
	#chain: Promise<unknown> = Promise.resolve();

	constructor(config: Config, logger: Logger) {
		this.#config = config;
		this.#logger = logger;
		this.#file = join(config.dataDir, "retained-folders.json");
	}

	get #list(): Kept[] {
		if (!this.#kept) {
			try {
				const parsed = JSON.parse(readFileSync(this.#file, "utf8")) as unknown;
				this.#kept = Array.isArray(parsed) ? (parsed as Kept[]) : [];
			} catch {
				this.#kept = [];
			}
		}
		return this.#kept;
	}

	/** `job` after every earlier change of the list (a stopping gateway waits for them: `stop`). */
	#serial<T>(job: () => Promise<T>): Promise<T> {
		const next = this.#chain.then(job, job);
		this.#chain = next.catch(() => {});
		return next;
	}

	async #save(): Promise<void> {
		try {
			await mkdir(this.#config.dataDir, { recursive: true });
			const temp = `${this.#file}.${process.pid}`;
			await writeFile(temp, JSON.stringify(this.#list));
			await rename(temp, this.#file);
		} catch (error) {
			this.#logger.warn({ err: error, file: this.#file }, "the list of kept folders could not be written");
		}
	}

	/** A deleted session's own folder, kept for the retention period. */
	keep(id: string, path: string): Promise<void> {
		return this.#serial(async () => {
			this.#kept = [...this.#list.filter((k) => k.path !== path), { id, path, deletedAt: new Date().toISOString() }];
			await this.#save();
		});
	}

	/**
	 * A deleted session that named `cwd`: a kept folder that is that folder or holds it was a
	 * client's choice as well as the gateway's — it is never removed.
	 */
	spare(cwd: string): Promise<void> {
		return this.#serial(async () => {
			const before = this.#list.length;
			this.#kept = this.#list.filter((k) => !worksIn(cwd, k.path));
			if (this.#kept.length !== before) await this.#save();
		});
	}

	/**
	 * Removes a deleted session's own folder now (`DELETE …?purge=true`), unless a session still
	 * works in it (another session named it as its cwd): then it is kept like any other.
	 */
	purge(path: string, inUse: () => Iterable<string>): Promise<void> {
		return this.#serial(async () => {
			const busy = [...inUse()].some((cwd) => worksIn(cwd, path));
			this.#kept = this.#list.filter((k) => k.path !== path);
			if (busy || !(await this.#remove(path)))
				this.#kept.push({ id: basename(path), path, deletedAt: new Date().toISOString() });
			await this.#save();
		});
	}

	/** Removes the kept folders past the retention period that no session (`inUse`: their folders) works in. */
	sweep(inUse: () => Iterable<string>): Promise<number> {
		return this.#serial(async () => {
			const days = this.#config.workspaceRetentionDays;
			if (days <= 0) return 0;
			const cutoff = Date.now() - days * dayMs;
			const busy = [...inUse()];
			let removed = 0;
			const kept: Kept[] = [];
			for (const entry of this.#list) {
				const due = Date.parse(entry.deletedAt) <= cutoff;
				if (!due || busy.some((cwd) => worksIn(cwd, entry.path))) {
					kept.push(entry);
					continue;
				}
				if (await this.#remove(entry.path)) removed++;
				else kept.push(entry);
			}
			if (kept.length !== this.#list.length) {
				this.#kept = kept;
				await this.#save();
			}
			if (removed > 0) this.#logger.info({ removed, retentionDays: days }, "deleted sessions' folders removed");
			return removed;
		});
	}

	/** Sweeps now and then periodically (hourly, or more often for a retention under a few hours). */
	start(inUse: () => Iterable<string>): void {
		const days = this.#config.workspaceRetentionDays;
		if (days <= 0) return;
		const run = () =>
			void this.sweep(inUse).catch((err) => this.#logger.warn({ err }, "folder retention sweep failed"));
		run();
		const every = Math.min(60 * 60 * 1000, Math.max(1000, (days * dayMs) / 4));
		this.#timer = setInterval(run, every).unref();
	}

	/** No more sweeps; resolves once a removal under way has ended (the data dir may go then). */
	async stop(): Promise<void> {
		clearInterval(this.#timer);
		await this.#chain;
	}

	/**
	 * Removes the folder, never anything else: it must still be a real folder (not a link put in
	 * its place) directly named by a path inside the workspace root. True when it is gone.
	 */
	async #remove(path: string): Promise<boolean> {
		try {
			if (!existsSync(path)) return true;
			const root = realpathSync(this.#config.workspaceRoot);
			if (!lstatSync(path).isDirectory() || realpathSync(path) !== path || !isInside(root, dirname(path))) {
				this.#logger.warn({ path }, "a kept folder is no longer a folder inside the workspace root: left alone");
				return true;
			}
			await removeTree(path);
			return true;
		} catch (error) {
			this.#logger.warn({ err: error, path }, "a deleted session's folder could not be removed");
			return false;
		}
	}
}

/**
 * `rm -rf`: it walks a tree by descriptors, so a folder the agent nested past the system's path
 * limit (4,096 bytes) goes too, where Node's rm stops at it (ENAMETOOLONG) and the folder stayed.
 * Never across a mount; links are removed, not followed.
 */
async function removeTree(path: string): Promise<void> {
	await run("rm", ["-rf", "--one-file-system", "--", path], { timeout: 10 * 60 * 1000 });
}

/** A session working in `cwd` works in `folder`: the folder itself or one inside it. */
function worksIn(cwd: string, folder: string): boolean {
	return isInside(folder, cwd);
}
