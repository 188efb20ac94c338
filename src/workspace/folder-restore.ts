import { createHash, randomBytes } from "node:crypto";
import {
	type BigIntStats,
	closeSync,
	constants,
	fchmodSync,
	lstatSync,
	mkdirSync,
	openSync,
	readlinkSync,
	readSync,
	renameSync,
	symlinkSync,
	unlinkSync,
	writeSync,
} from "node:fs";
import { atFd, chmodAt, makeFolder, ParentCache, Slices } from "./folder-dirs.ts";
import {
	chunkBytes,
	chunkHashes,
	displayPath,
	type FolderEntry,
	isSafePath,
	type Manifest,
	type StatKey,
} from "./folder-scan.ts";

/**
 * Writes a stored manifest (folder-scan.ts) back into a session's folder on the node that took the
 * session over. Every folder on the way is made and opened through its parent's descriptor with
 * O_NOFOLLOW, so a link in the folder (left there by an agent, or by an earlier visit) is never
 * written through; each file goes to a temporary name first, is checked against its hash, and is
 * renamed into place. What cannot be written is named, never thrown: the caller reports it.
 * Syscalls are synchronous, in slices (folder-dirs.ts Slices): 10,000 files took 5.5 s otherwise.
 */

export interface RestoreOptions {
	/** The session's own folder: files that differ are replaced. Otherwise (a folder other sessions may share) only what is missing is written. */
	overwrite: boolean;
	/** The stored chunks, by sha256 (hex); absent ones are missing. */
	fetch(hashes: string[]): Promise<Map<string, Buffer>>;
}

export interface RestoreResult {
	/** Files, links and folders now as stored. */
	restored: number;
	/** Bytes of files written. */
	written: number;
	missing: { path: string; why: string }[];
	/** Files left as they were, differing from the stored copy (a shared folder is never overwritten). */
	kept: string[];
	/** lstat of each file known to hold its entry's content (the scan need not read them again). */
	stats: Map<string, StatKey>;
}

/** Chunks fetched per query at most (bytes): a folder of many small files in few round trips. */
const fetchBatchBytes = 16 * 1024 * 1024;

type Parent = { dir: number; name: Buffer };
type Content = (hash: string) => Buffer | undefined;

/** Restores `entries` into `cwd` (see the module's comment). */
export async function restoreFolder(
	root: string,
	cwd: string,
	entries: Manifest,
	options: RestoreOptions,
): Promise<RestoreResult> {
	const result: RestoreResult = { restored: 0, written: 0, missing: [], kept: [], stats: new Map() };
	const base = makeFolder(root, cwd);
	const parents = new ParentCache(base);
	const slices = new Slices();
	const sorted = [...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
	const folders: [string, FolderEntry][] = [];
	const missing = (path: string, why: string) => result.missing.push({ path: displayPath(path), why });
	try {
		// Chunks are fetched for a batch of files at a time; a file bigger than a batch, chunk by chunk.
		// Folders sort before what they hold and are made as they come: a batch's files find theirs.
		let batch: [string, FolderEntry][] = [];
		let batchBytes = 0;
		const flush = async () => {
			const files = batch;
			batch = [];
			batchBytes = 0;
			const hashes = [...new Set(files.flatMap(([, entry]) => chunkHashes(entry)))];
			const content = hashes.length > 0 ? await options.fetch(hashes) : new Map<string, Buffer>();
			for (const [path, entry] of files) {
				const parent = parents.open(path);
				if (!parent) missing(path, "its folder could not be made");
				else if (entry.kind === "l") placeLink(path, entry, parent, options, result);
				else
					await placeFile(
						path,
						entry,
						parent,
						options,
						result,
						chunksOf(entry, (h) => content.get(h)),
					);
				await slices.tick(8, entry.size);
			}
		};
		for (const [path, entry] of sorted) {
			if (!isSafePath(path)) missing(path, "not a name inside the folder");
			else if (entry.kind === "d") {
				if (makeDir(path, parents, result)) folders.push([path, entry]);
				await slices.tick(3);
			} else if (entry.kind === "f" && entry.size > fetchBatchBytes) {
				const parent = parents.open(path);
				if (!parent) missing(path, "its folder could not be made");
				else await placeFile(path, entry, parent, options, result, largeChunks(entry, options));
			} else {
				batch.push([path, entry]);
				batchBytes += entry.size;
				if (batchBytes >= fetchBatchBytes || batch.length >= 2000) await flush();
			}
		}
		await flush();
		// Folder modes last, deepest first: a read-only folder is filled before it becomes read-only.
		for (const [path, entry] of folders.reverse()) {
			const parent = parents.open(path);
			if (parent) chmodAt(parent.dir, parent.name, entry.mode);
		}
	} finally {
		parents.close();
		closeSync(base);
	}
	return result;
}

function makeDir(path: string, parents: ParentCache, result: RestoreResult): boolean {
	const parent = parents.open(path);
	const why = (() => {
		if (!parent) return "its folder could not be made";
		const at = atFd(parent.dir, parent.name);
		try {
			mkdirSync(at, { mode: 0o700 });
		} catch (error) {
			const code = (error as NodeJS.ErrnoException).code;
			if (code !== "EEXIST") return `not made (${code})`;
		}
		return lstatSync(at, { throwIfNoEntry: false })?.isDirectory() ? undefined : "a file or a link has its name";
	})();
	if (why) result.missing.push({ path: displayPath(path), why });
	else result.restored++;
	return why === undefined;
}

/** A small file's chunks from a fetched batch; undefined when one is not in the database. */
function chunksOf(entry: FolderEntry, content: Content): Buffer[] | undefined {
	const chunks = chunkHashes(entry).map((h) => content(h));
	return chunks.some((c) => c === undefined) ? undefined : (chunks as Buffer[]);
}

/** A file bigger than a fetch batch: its chunks fetched a batch at a time as they are written. */
async function* largeChunks(entry: FolderEntry, options: RestoreOptions): AsyncGenerator<Buffer> {
	const hashes = chunkHashes(entry);
	const per = fetchBatchBytes / chunkBytes;
	for (let at = 0; at < hashes.length; at += per) {
		const some = hashes.slice(at, at + per);
		const got = await options.fetch([...new Set(some)]);
		for (const hash of some) {
			const chunk = got.get(hash);
			if (!chunk) throw new Error("its content is not in the database");
			yield chunk;
		}
	}
}

async function placeFile(
	path: string,
	entry: FolderEntry,
	parent: Parent,
	options: RestoreOptions,
	result: RestoreResult,
	chunks: Iterable<Buffer> | AsyncIterable<Buffer> | undefined,
): Promise<void> {
	if (!chunks) {
		result.missing.push({ path: displayPath(path), why: "its content is not in the database" });
		return;
	}
	const at = atFd(parent.dir, parent.name);
	const before = lstatSync(at, { bigint: true, throwIfNoEntry: false });
	if (before?.isDirectory()) {
		result.missing.push({ path: displayPath(path), why: "a folder has its name" });
		return;
	}
	if (before?.isFile() && Number(before.size) === entry.size && sameContent(at, entry)) {
		result.stats.set(path, statKey(before));
		result.restored++;
		return;
	}
	if (before && !options.overwrite) {
		result.kept.push(displayPath(path));
		return;
	}
	const temp = atFd(parent.dir, Buffer.from(`.pi-gateway-restore-${randomBytes(6).toString("hex")}`));
	let fd: number | undefined;
	try {
		fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
		const hash = createHash("sha256");
		let size = 0;
		for await (const chunk of chunks) {
			hash.update(chunk);
			for (let put = 0; put < chunk.length; ) put += writeSync(fd, chunk, put, chunk.length - put, size + put);
			size += chunk.length;
		}
		// A database row changed or damaged since it was written is not passed off as the file.
		if (size !== entry.size || !entry.hash?.equals(hash.digest()))
			throw new Error("its content does not match its hash");
		fchmodSync(fd, entry.mode);
		closeSync(fd);
		fd = undefined;
		renameSync(temp, at);
		const after = lstatSync(at, { bigint: true, throwIfNoEntry: false });
		if (after) result.stats.set(path, statKey(after));
		result.restored++;
		result.written += size;
	} catch (error) {
		if (fd !== undefined) closeSync(fd);
		try {
			unlinkSync(temp);
		} catch {}
		const why = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
		result.missing.push({ path: displayPath(path), why: `not written (${why})` });
	}
}

function placeLink(path: string, entry: FolderEntry, parent: Parent, options: RestoreOptions, result: RestoreResult) {
	const at = atFd(parent.dir, parent.name);
	const target = entry.target as Buffer;
	const before = lstatSync(at, { throwIfNoEntry: false });
	if (before?.isSymbolicLink()) {
		let now: Buffer | undefined;
		try {
			now = readlinkSync(at, { encoding: "buffer" });
		} catch {}
		if (now?.equals(target)) {
			result.restored++;
			return;
		}
	}
	if (before?.isDirectory()) {
		result.missing.push({ path: displayPath(path), why: "a folder has its name" });
		return;
	}
	if (before && !options.overwrite) {
		result.kept.push(displayPath(path));
		return;
	}
	// Made beside it and renamed over: the link is made as a link, where it points is never looked at.
	const temp = atFd(parent.dir, Buffer.from(`.pi-gateway-restore-${randomBytes(6).toString("hex")}`));
	try {
		symlinkSync(target, temp);
		renameSync(temp, at);
		result.restored++;
	} catch (error) {
		try {
			unlinkSync(temp);
		} catch {}
		result.missing.push({ path: displayPath(path), why: `not made (${(error as NodeJS.ErrnoException).code})` });
	}
}

/** The file at `at` (a regular file, by lstat) holds the entry's content. */
function sameContent(at: Buffer, entry: FolderEntry): boolean {
	let fd: number;
	try {
		fd = openSync(at, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
	} catch {
		return false;
	}
	try {
		const hash = createHash("sha256");
		const buffer = Buffer.allocUnsafe(Math.min(chunkBytes, Math.max(entry.size, 1)));
		for (let position = 0; position < entry.size; ) {
			const got = readSync(fd, buffer, 0, Math.min(buffer.length, entry.size - position), position);
			if (got === 0) return false;
			hash.update(buffer.subarray(0, got));
			position += got;
		}
		return entry.hash?.equals(hash.digest()) ?? false;
	} catch {
		return false;
	} finally {
		closeSync(fd);
	}
}

const statKey = (stat: BigIntStats): StatKey => ({
	ino: stat.ino,
	size: stat.size,
	mtimeNs: stat.mtimeNs,
	ctimeNs: stat.ctimeNs,
});
