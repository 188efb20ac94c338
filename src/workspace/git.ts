import { spawnSync } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { GatewayError } from "../shared/errors.ts";
import type { Confinement } from "./confined.ts";
import { runToolOffLoop } from "./tool-spawner.ts";

/**
 * git on a shadow repository: `--git-dir` under the gateway's data dir, `--work-tree` the
 * session's folder, so nothing is ever written into the folder. Spawned without a shell, inside
 * bubblewrap where it holds (confined.ts: the folder read-only, only the git dir writable), with
 * no system or user config and no hooks, literal pathspecs, and a deadline.
 *
 * Nothing in the folder steers it:
 * - Config comes only from these `-c` flags and the git dir (ours): a `.git/config` or `git/config`
 *   the agent plants in its folder is a file like any other (GIT_DIR is given, nothing is discovered).
 * - Ignore files: `core.excludesFile=/dev/null`, and snapshots add with `--force`, so the folder's
 *   `.gitignore` hides nothing from "what changed".
 * - Attributes: the folder's `.gitattributes` is read by git whatever we say (git 2.39 has no
 *   --attr-source). What it can name that runs a program (`filter`, `diff` drivers, textconv, merge
 *   drivers) needs a config section to define it, and there is none: an undefined filter or driver
 *   is ignored, a `required` filter is a config key too. What it can still do without config is
 *   change what is stored and shown: `text`/`eol`/`crlf` rewrite line endings, `ident` collapses
 *   `$Id$`, `working-tree-encoding` re-encodes (or fails the add), `-diff`/`binary` hide a file's
 *   diff as if binary. So the git dir's `info/attributes`, which takes precedence over every
 *   `.gitattributes` attribute by attribute, sets each of those back to unspecified for every path
 *   (shadowAttributes): git's defaults apply, bytes are stored as they are.
 * - Revisions are only object ids we wrote, checked (objectId) and put after `--end-of-options`.
 */
export interface GitRepo {
	gitDir: string;
	workTree: string;
	/** How git is confined; by default what is registered for the data dir holding the git dir. */
	confine?: Confinement;
	/** Paths of the work tree git is shown as empty files (confined only: FIFOs it would wait on). */
	covered?: string[];
	/**
	 * Aborted: no further git starts (its session was deleted). One running is let finish: killing
	 * bwrap as it starts can leave its sandboxed child holding the pipes until the deadline.
	 */
	signal?: AbortSignal;
	/** false: git runs with no index (storedOnly). */
	index?: false;
}

/**
 * The repository for reading what snapshots stored. git's diff takes a blob's text from the work
 * tree instead when the index says the file there holds that blob (its stat matches): a file
 * rewritten behind the stat (git-index.ts) then showed its new text under the stored blob's id.
 * With no index (a file that does not exist), git reads only objects.
 */
export function storedOnly(repo: GitRepo): GitRepo {
	return { ...repo, index: false };
}

const safety = [
	"-c",
	"core.fsmonitor=false",
	"-c",
	"core.hooksPath=/dev/null",
	"-c",
	"core.excludesFile=/dev/null",
	"-c",
	"core.attributesFile=/dev/null",
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

/** Every attribute that changes what git stores or shows, unspecified for every path (see above). */
export const shadowAttributes =
	"* !text !eol !crlf !diff !merge !filter !ident !working-tree-encoding !whitespace !delta !encoding\n";

/** Writes the shadow repository's own attributes (before each snapshot: a repository of an older gateway gets them too). */
export async function writeShadowAttributes(gitDir: string): Promise<void> {
	await mkdir(`${gitDir}/info`, { recursive: true });
	await writeFile(`${gitDir}/info/attributes`, shadowAttributes);
}

/** The tree of an empty folder: every git knows it without storing it. */
export const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/** A full object id (SHA-1) as git prints it: nothing else read back from disk becomes a git argument. */
export const objectId = /^[0-9a-f]{40}$/;

export function assertObjectId(id: unknown): asserts id is string {
	if (typeof id !== "string" || !objectId.test(id))
		throw new GitError(`not an object id: ${JSON.stringify(String(id).slice(0, 80))}`);
}

function env(repo: GitRepo): Record<string, string> {
	return {
		PATH: process.env.PATH ?? "/usr/bin:/bin",
		GIT_DIR: repo.gitDir,
		GIT_WORK_TREE: repo.workTree,
		GIT_INDEX_FILE: repo.index === false ? `${repo.gitDir}/no-index` : `${repo.gitDir}/index`,
		GIT_CONFIG_NOSYSTEM: "1",
		GIT_CONFIG_GLOBAL: "/dev/null",
		GIT_ATTR_NOSYSTEM: "1",
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
 * Runs git (`input`, when given, is its stdin); resolves its stdout (at most `maxBytes`, then git is stopped and `cut` is set).
 * Rejects on a non-zero exit or when `timeoutMs` passes (git is killed). Spawned from the tool
 * thread (tool-spawner.ts), so its spawn does not hold the event loop.
 */
export function git(
	repo: GitRepo,
	args: string[],
	options: { timeoutMs: number; maxBytes?: number; input?: Uint8Array },
): Promise<{ out: Buffer; cut: boolean; stderr: string }> {
	if (repo.signal?.aborted) return Promise.reject(new GitError(`git ${args[0]} not started: its session is gone`));
	const run = runToolOffLoop({
		confine: repo.confine,
		tool: {
			command: "git",
			args: [...safety, ...args],
			folder: repo.workTree,
			writable: [repo.gitDir],
			env: env(repo),
			...(repo.covered ? { covered: repo.covered } : {}),
			...(options.input ? { input: options.input } : {}),
		},
		name: `git ${args[0]}`,
		timeoutMs: options.timeoutMs,
		maxBytes: options.maxBytes ?? 16 * 1024 * 1024,
	}).then(
		// A view, not a copy: from the thread the bytes arrive as a plain Uint8Array.
		(output) => ({ ...output, out: Buffer.from(output.out.buffer, output.out.byteOffset, output.out.byteLength) }),
		(error: Error) => {
			// A folder replaced by a link is the caller's 409, not git's failure.
			throw error instanceof GatewayError ? error : new GitError(error.message);
		},
	);
	workOnDisk(run.catch(() => {}));
	return run;
}

/**
 * Paths of the work tree the index does not hold as they are: changed since git last read them
 * (tracked files, first), then new ones (ignored files too: the shadow repository ignores nothing).
 * `-z`, so no name is misread.
 */
export async function unstaged(repo: GitRepo, timeoutMs: number): Promise<string[]> {
	const list = async (which: string) => {
		const { out } = await git(repo, ["ls-files", "-z", which], { timeoutMs });
		return out.toString("utf8").split("\0").filter(Boolean);
	};
	return [...new Set([...(await list("--modified")), ...(await list("--others"))])];
}

/** A repository's bytes on disk (git's count), and its loose objects. */
export async function repoUsage(
	repo: GitRepo,
	timeoutMs: number,
): Promise<{ bytes: number; looseBytes: number; looseObjects: number }> {
	const { out } = await git(repo, ["count-objects", "-v"], { timeoutMs });
	// `name: value` lines (count, size, in-pack, packs, size-pack, prune-packable, garbage, size-garbage).
	const counts = new Map(
		out
			.toString("utf8")
			.split("\n")
			.map((line) => line.split(": ") as [string, string]),
	);
	const field = (name: string) => Number(counts.get(name) ?? 0) || 0;
	const looseBytes = field("size") * 1024;
	return {
		bytes: looseBytes + (field("size-pack") + field("size-garbage")) * 1024,
		looseBytes,
		looseObjects: field("count"),
	};
}
