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

/** A changed path as git names it (bytes: a name need not be UTF-8) and as the API shows it. */
interface Listed {
	path: string;
	status: ChangeStatus;
	name: Buffer;
}

/** The paths that differ between two trees and how, at most `max` (sorted by path, as git lists them). */
export async function changedPaths(
	repo: GitRepo,
	from: string,
	to: string,
	limits: Pick<ChangeLimits, "timeoutMs">,
	max: number,
): Promise<{ files: { path: string; status: ChangeStatus }[]; truncated: boolean }> {
	const { files, truncated } = await listed(repo, from, to, limits, max);
	return { files: files.map(({ path, status }) => ({ path, status })), truncated };
}

async function listed(
	repo: GitRepo,
	from: string,
	to: string,
	limits: Pick<ChangeLimits, "timeoutMs">,
	max: number,
): Promise<{ files: Listed[]; truncated: boolean }> {
	// Nothing to ask git (an empty folder's tree needs no repository yet: snapshots.ts).
	if (from === to) return { files: [], truncated: false };
	const { out } = await git(
		storedOnly(repo),
		["diff-tree", "-r", "-z", "--name-status", ...diffOptions, ...trees(from, to)],
		limits,
	);
	const fields = splitNul(out);
	const files: Listed[] = [];
	let total = 0;
	for (let i = 0; i + 1 < fields.length; i += 2) {
		const status = statuses[(fields[i] as Buffer).toString("latin1").charAt(0)];
		if (!status) continue;
		total++;
		const name = fields[i + 1] as Buffer;
		if (files.length < max) files.push({ path: name.toString("utf8"), status, name });
	}
	return { files, truncated: total > files.length };
}

/**
 * Every changed file between two trees with its unified diff: one `diff-tree -p` for all of them,
 * its output read up to the total cap, cut at each `diff --git` header, and each piece given to
 * the file its header names (compared as bytes, with git's own quoting): a type change is two
 * pieces of one file, and a name that is not UTF-8 is its bytes, so no diff lands on a neighbour.
 * Binary files (git's NUL test) are flagged and carry no diff.
 */
export async function changesBetween(repo: GitRepo, from: string, to: string, limits: ChangeLimits) {
	const { files, truncated } = await listed(repo, from, to, limits, limits.maxFiles);
	if (files.length === 0 && !truncated) return { files: [], truncated: false };
	const numstat = await git(
		storedOnly(repo),
		["diff-tree", "-r", "-z", "--numstat", ...diffOptions, ...trees(from, to)],
		limits,
	);
	// `<added>\t<removed>\t<path>` records; `-\t-\t` is git's word for binary.
	const binary = new Set<string>();
	for (const record of splitNul(numstat.out))
		if (record.subarray(0, 4).toString("latin1") === "-\t-\t") binary.add(record.subarray(4).toString("latin1"));
	const isBinary = (file: Listed) => binary.has(file.name.toString("latin1"));
	const patches = new Map<string, Buffer[]>();
	let cut = false;
	if (files.some((file) => !isBinary(file))) {
		// No pathspec: argv is UTF-8, and a name that is not could not be named. Binary files come as
		// one line each, files past maxFiles last (git's order): the byte cap bounds it all.
		const patch = await git(storedOnly(repo), ["diff-tree", "-r", "-p", "-U3", ...diffOptions, ...trees(from, to)], {
			...limits,
			maxBytes: limits.maxTotalBytes,
		});
		cut = patch.cut;
		const headerOf = (piece: Buffer) => piece.subarray(0, piece.indexOf(0x0a)).toString("latin1");
		const pieces = splitPatch(patch.out);
		// The last piece of a cut output is incomplete: its file's pieces are all dropped (it says
		// `truncated`), the first half of a type change too.
		const incomplete = cut ? pieces.pop() : undefined;
		for (const piece of pieces) {
			const header = headerOf(piece);
			const had = patches.get(header);
			if (had) had.push(piece);
			else patches.set(header, [piece]);
		}
		if (incomplete) patches.delete(headerOf(incomplete));
	}
	const changes: FileChange[] = files.map((file) => {
		const { path, status, name } = file;
		const binaryFile = isBinary(file);
		const pieces = patches.get(diffHeader(name));
		const bytes = pieces === undefined ? undefined : Buffer.concat(pieces);
		const tooLong = bytes !== undefined && bytes.length > limits.maxDiffBytes;
		return {
			path,
			status,
			binary: binaryFile,
			diff: binaryFile || tooLong || bytes === undefined ? null : bytes.toString("utf8"),
			truncated: !binaryFile && (tooLong || bytes === undefined),
		};
	});
	return { files: changes, truncated: truncated || cut };
}

/** NUL-terminated records as bytes (the last, empty, left out). */
function splitNul(out: Buffer): Buffer[] {
	const records: Buffer[] = [];
	let start = 0;
	for (let end = out.indexOf(0); end !== -1; end = out.indexOf(0, start)) {
		records.push(out.subarray(start, end));
		start = end + 1;
	}
	if (start < out.length) records.push(out.subarray(start));
	return records;
}

const diffGit = Buffer.from("diff --git ");
const lineDiffGit = Buffer.from("\ndiff --git ");

/** A patch cut before each `diff --git ` that starts a line (content lines start with ' ', '+' or '-'). */
function splitPatch(out: Buffer): Buffer[] {
	const starts: number[] = [];
	if (out.subarray(0, diffGit.length).equals(diffGit)) starts.push(0);
	for (let at = out.indexOf(lineDiffGit); at !== -1; at = out.indexOf(lineDiffGit, at + 1)) starts.push(at + 1);
	return starts.map((start, i) => out.subarray(start, starts[i + 1] ?? out.length));
}

/**
 * The line git starts a file's patch with, as bytes in a latin1 string: `diff --git a/<name>
 * b/<name>`, each side quoted as git quotes it with core.quotePath=false (git.ts): in double
 * quotes, with C escapes, when the name holds a control byte, a double quote or a backslash.
 */
function diffHeader(name: Buffer): string {
	return `diff --git ${quoted("a/", name)} ${quoted("b/", name)}`;
}

const escapes: Record<number, string> = {
	7: "a",
	8: "b",
	9: "t",
	10: "n",
	11: "v",
	12: "f",
	13: "r",
	34: '"',
	92: "\\",
};
const mustQuote = (byte: number) => byte < 0x20 || byte === 0x22 || byte === 0x5c || byte === 0x7f;

function quoted(prefix: string, name: Buffer): string {
	if (!name.some(mustQuote)) return prefix + name.toString("latin1");
	let out = `"${prefix}`;
	for (const byte of name) {
		if (!mustQuote(byte)) out += String.fromCharCode(byte);
		else if (escapes[byte] !== undefined) out += `\\${escapes[byte]}`;
		else out += `\\${byte.toString(8).padStart(3, "0")}`;
	}
	return `${out}"`;
}
