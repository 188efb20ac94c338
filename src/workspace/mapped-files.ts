import { closeSync, openSync, readdirSync, readFileSync, readSync } from "node:fs";

/**
 * A write through a shared, writable memory mapping changes a file's times only when a page first
 * faults (again after writeback; on tmpfs, never again): later writes leave mtime, ctime and size
 * as git recorded them, so a snapshot takes the file as unchanged (an attacker's review kept a
 * mapping open in a process the run left behind and wrote through it between snapshots). The
 * inodes a session's processes map so are read from /proc before each snapshot's add, and their
 * index entries lose their stat after it (git-index.ts): the next snapshot reads them again.
 */

/** `start-end perms offset dev inode path` lines whose perms are `rw-s` or `rwxs`: a shared writable mapping. */
const sharedWritable = /^\S+ .w.s \S+ \S+ (\d+)/gm;

/**
 * Bounds on the event loop's time: processes, and bytes of maps, read at most a snapshot (an agent
 * can fork many and map much). Past either, the rest counts as unreadable: the snapshot after reads
 * every file (the agent's own session pays).
 */
const maxProcesses = 256;
const maxMapsBytes = 4 * 1024 * 1024;

export interface MappedFiles {
	/** Inodes (their low 32 bits, as git's index keeps them) mapped shared and writable by a process of the tree. */
	inodes: Set<number>;
	/** Processes whose mappings could not be read (gone meanwhile is not counted): the caller cannot tell. */
	unreadable: number;
}

/**
 * The inodes `root` and its descendants map shared and writable (`rw-s` in /proc/<pid>/maps).
 * Read synchronously: /proc answers from memory, and a few dozen small reads cost less so than
 * each through the thread pool (2–5 ms of CPU a snapshot, measured, against well under one).
 */
export function sharedWritableInodes(root: number, bounds = { maxProcesses, maxMapsBytes }): MappedFiles {
	const inodes = new Set<number>();
	let unreadable = 0;
	const seen = new Set<number>();
	const queue = [root];
	let budget = bounds.maxMapsBytes;
	while (queue.length > 0) {
		const pid = queue.shift() as number;
		if (seen.has(pid)) continue;
		if (seen.size >= bounds.maxProcesses) {
			unreadable++;
			break;
		}
		seen.add(pid);
		let maps: string | undefined;
		try {
			maps = readAtMost(`/proc/${pid}/maps`, budget);
		} catch (error) {
			const { code } = error as NodeJS.ErrnoException;
			if (code !== "ENOENT" && code !== "ESRCH") unreadable++;
			continue;
		}
		if (maps === undefined) {
			unreadable++;
			break;
		}
		budget -= maps.length;
		for (const [, inode] of maps.matchAll(sharedWritable)) {
			// The index keeps an inode's low 32 bits: so is it compared.
			const low = Number(BigInt(inode as string) & 0xffffffffn);
			if (low > 0) inodes.add(low);
		}
		queue.push(...childrenOf(pid));
	}
	return { inodes, unreadable };
}

/** The file's text, or undefined when it holds more than `limit` bytes. */
function readAtMost(path: string, limit: number): string | undefined {
	const fd = openSync(path, "r");
	try {
		const chunks: Buffer[] = [];
		let total = 0;
		for (;;) {
			const chunk = Buffer.allocUnsafe(64 * 1024);
			const read = readSync(fd, chunk, 0, chunk.length, null);
			if (read === 0) return Buffer.concat(chunks, total).toString("latin1");
			total += read;
			if (total > limit) return undefined;
			chunks.push(chunk.subarray(0, read));
		}
	} finally {
		closeSync(fd);
	}
}

/** Every thread's children (a child belongs to the thread that forked it). */
function childrenOf(pid: number): number[] {
	let tasks: string[];
	try {
		tasks = readdirSync(`/proc/${pid}/task`);
	} catch {
		return [];
	}
	const children: number[] = [];
	for (const task of tasks) {
		let list: string;
		try {
			list = readFileSync(`/proc/${pid}/task/${task}/children`, "latin1");
		} catch (error) {
			// A kernel without /proc/…/children (CONFIG_PROC_CHILDREN): every process's parent instead.
			if ((error as NodeJS.ErrnoException).code === "ENOENT" && task === String(pid)) list = childrenByParent(pid);
			else continue;
		}
		for (const child of list.split(" ")) if (child) children.push(Number(child));
	}
	return children;
}

/** Children of `pid` from each process's stat (its 4th field, after the parenthesised name). */
function childrenByParent(pid: number): string {
	const children: string[] = [];
	for (const entry of readdirSync("/proc")) {
		if (!/^\d+$/.test(entry)) continue;
		let stat: string;
		try {
			stat = readFileSync(`/proc/${entry}/stat`, "latin1");
		} catch {
			continue;
		}
		const parent = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1];
		if (parent === String(pid)) children.push(entry);
	}
	return children.join(" ");
}
