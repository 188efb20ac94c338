import { readFile, stat } from "node:fs/promises";
import { GitError, type GitRepo, git } from "./git.ts";
import type { MappedFiles } from "./mapped-files.ts";

/**
 * git compares a file's times to the second (this git has no nanosecond compare), so a file
 * rewritten in the second git read it, at the same size, with its mtime set back, keeps its index
 * entry's stat and is never read again: its edit is in no snapshot (a process the agent leaves
 * running can do it on purpose). After each `git add`, the entries whose change time falls in the
 * second the add began or later lose their stat in the index, so the next add reads them again.
 * ctime cannot be set back from user space: a rewrite in any later second changes it.
 */

/** An index entry as `update-index --index-info` takes it back: its path as the bytes git stored. */
export interface IndexEntry {
	/** The file's mtime when git read it, seconds. */
	mtimeSeconds: number;
	mode: number;
	objectId: string;
	path: Buffer;
}

const entryHead = 62; // 10 × 4 bytes of stat, a 20-byte object id, 2 bytes of flags
const extended = 0x4000;
const nameMask = 0x0fff;

/** What an entry's stat says, to choose by. */
export interface EntryStat {
	ctimeSeconds: number;
	mtimeSeconds: number;
	ino: number;
}

/** Entries of a git index whose change time is at or after `sinceSeconds`. */
export function recentEntries(index: Buffer, sinceSeconds: number): IndexEntry[] {
	return indexEntries(index, (stat) => stat.ctimeSeconds >= sinceSeconds);
}

/**
 * The entries of a git index (versions 2 and 3; the shadow repositories set no other) that
 * `chosen` keeps. Throws on anything else, so an index it cannot read is a failed snapshot,
 * never a silent pass.
 */
export function indexEntries(index: Buffer, chosen: (stat: EntryStat) => boolean): IndexEntry[] {
	if (index.length < 12 || index.toString("latin1", 0, 4) !== "DIRC") throw new GitError("not a git index");
	const version = index.readUInt32BE(4);
	if (version !== 2 && version !== 3) throw new GitError(`git index version ${version} is not read here`);
	const count = index.readUInt32BE(8);
	const recent: IndexEntry[] = [];
	let at = 12;
	for (let i = 0; i < count; i++) {
		if (at + entryHead > index.length) throw new GitError("git index cut short");
		const flags = index.readUInt16BE(at + 60);
		const nameAt = at + entryHead + (version === 3 && flags & extended ? 2 : 0);
		let nameLength = flags & nameMask;
		// 0xFFF: the name is that long or longer; it ends at its NUL.
		if (nameLength === nameMask) nameLength = index.indexOf(0, nameAt + nameMask) - nameAt;
		if (nameLength < 0 || nameAt + nameLength > index.length) throw new GitError("git index cut short");
		const stat = {
			ctimeSeconds: index.readUInt32BE(at),
			mtimeSeconds: index.readUInt32BE(at + 8),
			ino: index.readUInt32BE(at + 20),
		};
		if (chosen(stat))
			recent.push({
				mtimeSeconds: stat.mtimeSeconds,
				mode: index.readUInt32BE(at + 24),
				objectId: index.toString("hex", at + 40, at + 60),
				path: Buffer.from(index.subarray(nameAt, nameAt + nameLength)),
			});
		// 1–8 NULs pad each entry to a multiple of 8 bytes, counted from the entry's start.
		at += (nameAt - at + nameLength + 8) & ~7;
	}
	return recent;
}

/**
 * Takes the stat of the index entries git could take as unchanged while they are not, so the next
 * add reads those files:
 * - those that changed in or after `sinceSeconds` (the second the add began, by a clock set back
 *   by more than the tick file times may lag it), but not those whose mtime is at or after the
 *   index's own (git's "racily clean" entries, whose content git checks again itself, as it does
 *   for a plain edit in the second of an add: the usual snapshot runs no git for this);
 * - those of files mapped shared and writable (`mapped`, by inode: mapped-files.ts), and every
 *   entry when some process's mappings could not be read.
 */
export async function forgetRecentStat(
	repo: GitRepo,
	sinceSeconds: number,
	timeoutMs: number,
	mapped?: MappedFiles,
): Promise<number> {
	const path = `${repo.gitDir}/index`;
	const read = await Promise.all([readFile(path), stat(path)]).catch((error: NodeJS.ErrnoException) => {
		if (error.code === "ENOENT") return undefined;
		throw error;
	});
	if (read === undefined) return 0;
	const [index, { mtimeMs }] = read;
	const indexSeconds = Math.floor(mtimeMs / 1000);
	const everything = (mapped?.unreadable ?? 0) > 0;
	const recent = indexEntries(
		index,
		(entry) =>
			everything ||
			(entry.ctimeSeconds >= sinceSeconds && entry.mtimeSeconds < indexSeconds) ||
			(mapped?.inodes.has(entry.ino) ?? false),
		// Gitlinks are dropped from the index (gitlinks.ts): none is put back here.
	).filter((entry) => entry.mode !== 0o160000);
	if (recent.length === 0) return 0;
	// `<mode> <id>\t<path>\0`: the path as git stored it, bytes, never decoded (a name need not be UTF-8).
	const input = Buffer.concat(
		recent.flatMap((entry) => [
			Buffer.from(`${entry.mode.toString(8)} ${entry.objectId}\t`, "latin1"),
			entry.path,
			Buffer.alloc(1),
		]),
	);
	await git(repo, ["update-index", "-z", "--index-info"], { timeoutMs, input });
	return recent.length;
}
