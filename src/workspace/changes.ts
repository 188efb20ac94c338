import { assertObjectId, type GitRepo, git, storedOnly } from "./git.ts";

export type ChangeStatus = "added" | "modified" | "deleted";

export interface FileChange {
	path: string;
	status: ChangeStatus;
	binary: boolean;
	/** Unified diff text; null for a binary file, or past the size caps (`truncated`). */
	diff: string | null;
	truncated: boolean;
}

export interface ChangeLimits {
	/** Files listed at most. */
	maxFiles: number;
	/** Bytes of one file's diff at most. */
	maxDiffBytes: number;
	/** Bytes of every diff together at most. */
	maxTotalBytes: number;
	timeoutMs: number;
}

const statuses: Record<string, ChangeStatus> = { A: "added", D: "deleted", M: "modified", T: "modified" };
// --ignore-submodules=all: a tree from before gitlinks were dropped (snapshots.ts) may hold one, and
// an agent's .gitmodules, read for it, failed the whole diff (500).
const diffOptions = ["--no-renames", "--no-ext-diff", "--no-textconv", "--no-color", "--ignore-submodules=all"];

/** Two tree ids as git's last options: checked to be ids (they come back from runs.json), after `--end-of-options`. */
function trees(from: string, to: string): string[] {
	assertObjectId(from);
	assertObjectId(to);
	return ["--end-of-options", from, to];
}

/** The paths that differ between two trees and how, at most `max` (sorted by path, as git lists them). */
export async function changedPaths(
	repo: GitRepo,
	from: string,
	to: string,
	limits: Pick<ChangeLimits, "timeoutMs">,
	max: number,
): Promise<{ files: { path: string; status: ChangeStatus }[]; truncated: boolean }> {
	// Nothing to ask git (an empty folder's tree needs no repository yet: snapshots.ts).
	if (from === to) return { files: [], truncated: false };
	const { out } = await git(
		storedOnly(repo),
		["diff-tree", "-r", "-z", "--name-status", ...diffOptions, ...trees(from, to)],
		limits,
	);
	const fields = out.toString("utf8").split("\0");
	const files: { path: string; status: ChangeStatus }[] = [];
	let total = 0;
	for (let i = 0; i + 1 < fields.length; i += 2) {
		const status = statuses[(fields[i] as string).charAt(0)];
		if (!status) continue;
		total++;
		if (files.length < max) files.push({ path: fields[i + 1] as string, status });
	}
	return { files, truncated: total > files.length };
}

/**
 * Every changed file between two trees with its unified diff: one `diff-tree -p` for all of them,
 * its output read up to the total cap and cut at each `diff --git` header (git lists files in the
 * same order as --name-status). Binary files (git's NUL test) are flagged and carry no diff.
 */
export async function changesBetween(repo: GitRepo, from: string, to: string, limits: ChangeLimits) {
	const { files, truncated } = await changedPaths(repo, from, to, limits, limits.maxFiles);
	if (files.length === 0 && !truncated) return { files: [], truncated: false };
	const numstat = await git(
		storedOnly(repo),
		["diff-tree", "-r", "-z", "--numstat", ...diffOptions, ...trees(from, to)],
		limits,
	);
	const binary = new Set<string>();
	for (const record of numstat.out.toString("utf8").split("\0")) {
		const [added, removed, path] = record.split("\t");
		if (added === "-" && removed === "-" && path) binary.add(path);
	}
	const text = files.filter((f) => !binary.has(f.path));
	const patches = new Map<string, string>();
	let cut = false;
	if (text.length > 0) {
		const args = ["diff-tree", "-r", "-p", "-U3", ...diffOptions, ...trees(from, to), "--", ...text.map((f) => f.path)];
		const patch = await git(storedOnly(repo), args, { ...limits, maxBytes: limits.maxTotalBytes });
		cut = patch.cut;
		const chunks = patch.out
			.toString("utf8")
			.split(/^(?=diff --git )/m)
			.filter((c) => c.startsWith("diff --git "));
		// The last chunk of a cut output is incomplete: it is dropped (its file says `truncated`).
		if (cut) chunks.pop();
		chunks.forEach((chunk, i) => {
			const file = text[i];
			if (file) patches.set(file.path, chunk);
		});
	}
	const changes: FileChange[] = files.map((file) => {
		const isBinary = binary.has(file.path);
		const diff = patches.get(file.path);
		const tooLong = diff !== undefined && Buffer.byteLength(diff) > limits.maxDiffBytes;
		return {
			...file,
			binary: isBinary,
			diff: isBinary || tooLong || diff === undefined ? null : diff,
			truncated: !isBinary && (tooLong || diff === undefined),
		};
	});
	return { files: changes, truncated: truncated || cut };
}
