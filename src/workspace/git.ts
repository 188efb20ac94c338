import { spawn, spawnSync } from "node:child_process";

/**
 * git on a shadow repository: `--git-dir` under the gateway's data dir, `--work-tree` the
 * session's folder, so nothing is ever written into the folder. Spawned without a shell, with no
 * system or user config and no hooks (the folder is the agent's: its .gitattributes may name
 * drivers, which only config could define, and there is none), literal pathspecs, and a deadline.
 */
export interface GitRepo {
	gitDir: string;
	workTree: string;
}

const safety = [
	"-c",
	"core.fsmonitor=false",
	"-c",
	"core.hooksPath=/dev/null",
	"-c",
	"core.autocrlf=false",
	"-c",
	"core.quotePath=false",
	"-c",
	"core.safecrlf=false",
	"-c",
	"core.symlinks=true",
	"-c",
	"gc.auto=0",
	"-c",
	"maintenance.auto=false",
	"-c",
	"advice.addEmbeddedRepo=false",
	"-c",
	"diff.external=",
];

function env(repo: GitRepo): NodeJS.ProcessEnv {
	return {
		PATH: process.env.PATH ?? "/usr/bin:/bin",
		GIT_DIR: repo.gitDir,
		GIT_WORK_TREE: repo.workTree,
		GIT_INDEX_FILE: `${repo.gitDir}/index`,
		GIT_CONFIG_NOSYSTEM: "1",
		GIT_CONFIG_GLOBAL: "/dev/null",
		GIT_LITERAL_PATHSPECS: "1",
		GIT_TERMINAL_PROMPT: "0",
		GIT_OPTIONAL_LOCKS: "0",
		HOME: repo.gitDir,
		LC_ALL: "C",
	};
}

let available: boolean | undefined;
/** git on PATH (looked up once). */
export function hasGit(): boolean {
	available ??= spawnSync("git", ["--version"], { stdio: "ignore", timeout: 5000 }).status === 0;
	return available;
}

export class GitError extends Error {}

/**
 * Every git this process runs until it has exited, and every job of several (a snapshot is a few
 * gits and file writes) until it has ended: a stopping gateway waits for them (gitSettled).
 */
const running = new Set<Promise<unknown>>();

/** Counts `work` as running until it settles; returns it. */
export function workOnDisk<T>(work: Promise<T>): Promise<T> {
	running.add(work);
	void work.then(
		() => running.delete(work),
		() => running.delete(work),
	);
	return work;
}

/**
 * Resolves once no git or job of this process runs: a gateway that stops waits here, so no
 * snapshot goes on writing into a data dir its owner is about to remove (each git is bounded by
 * its deadline). Jobs count whole: between two of a snapshot's gits nothing ran, and a stopped
 * gateway's snapshot once went on to write git objects while a test removed its data dir.
 */
export async function gitSettled(): Promise<void> {
	while (running.size > 0) await Promise.allSettled([...running]);
}

/**
 * Runs git; resolves its stdout (at most `maxBytes`, then git is stopped and `cut` is set).
 * Rejects on a non-zero exit or when `timeoutMs` passes (git is killed).
 */
export function git(
	repo: GitRepo,
	args: string[],
	options: { timeoutMs: number; maxBytes?: number },
): Promise<{ out: Buffer; cut: boolean }> {
	const maxBytes = options.maxBytes ?? 16 * 1024 * 1024;
	return new Promise((resolve, reject) => {
		const child = spawn("git", [...safety, ...args], {
			cwd: repo.workTree,
			env: env(repo),
			stdio: ["ignore", "pipe", "pipe"],
		});
		workOnDisk(new Promise<void>((done) => child.once("close", () => done()).once("error", () => done())));
		const chunks: Buffer[] = [];
		let size = 0;
		let cut = false;
		let stderr = "";
		const timer = setTimeout(() => {
			child.kill("SIGKILL");
			reject(new GitError(`git ${args[0]} took longer than ${options.timeoutMs} ms`));
		}, options.timeoutMs);
		child.stdout.on("data", (chunk: Buffer) => {
			if (cut) return;
			if (size + chunk.length > maxBytes) {
				chunks.push(chunk.subarray(0, maxBytes - size));
				size = maxBytes;
				cut = true;
				child.kill("SIGKILL");
				return;
			}
			chunks.push(chunk);
			size += chunk.length;
		});
		child.stderr.on("data", (chunk: Buffer) => {
			if (stderr.length < 4096) stderr += chunk.toString("utf8");
		});
		child.on("error", (error) => {
			clearTimeout(timer);
			reject(error);
		});
		child.on("close", (code) => {
			clearTimeout(timer);
			if (code === 0 || cut) resolve({ out: Buffer.concat(chunks), cut });
			else reject(new GitError(`git ${args[0]} failed (${code}): ${stderr.trim().slice(0, 500)}`));
		});
	});
}
