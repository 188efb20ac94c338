import { createHash } from "node:crypto";
import {
	type BigIntStats,
	closeSync,
	constants,
	fstatSync,
	lstatSync,
	opendirSync,
	openSync,
	readlinkSync,
	readSync,
} from "node:fs";
import { atFd, openFolder, Slices } from "./folder-dirs.ts";

/**
 * A session's folder read as a manifest for PostgreSQL (src/cluster/folder-sync.ts): every file,
 * folder and symlink under it, each file cut into content-addressed chunks. The folder is the
 * agent's and hostile: nothing is looked up by a path that could lead out. Every folder is opened
 * through its parent's descriptor (`/proc/self/fd/N/name`, O_NOFOLLOW: openat), symlinks are read
 * as links and never followed, FIFOs, sockets and devices are skipped, a file swapped between its
 * lstat and its open is skipped, and no file is read past the size it had when listed or past the cap.
 *
 * Paths are raw bytes (a name need not be UTF-8: an agent can write any byte but `/` and NUL), held
 * as latin1 strings (one char per byte) so they key Maps and sort like the bytes.
 */

/** Files are stored in chunks of this size: appending to a big file stores only its new tail. */
export const chunkBytes = 1024 * 1024;
/** Entries one folder's manifest holds at most (files, folders and links). */
export const maxFolderEntries = 100_000;
/** Folder depth at most, and bytes of a path: past them an entry is left out. */
const maxDepth = 256;
const maxPathBytes = 4096;
/** The gateway's own temporary files (an upload in progress, a restore): never part of the folder. */
export const isOwnTemp = (name: string) =>
	name.startsWith(".pi-gateway-upload-") || name.startsWith(".pi-gateway-restore-");

export interface FolderEntry {
	/** f: a file, l: a symlink, d: a folder. */
	kind: "f" | "l" | "d";
	/** Permission bits (0o777). */
	mode: number;
	size: number;
	/** A file: sha256 of its content, and the sha256 of each chunk, concatenated (32 bytes each). */
	hash?: Buffer;
	chunks?: Buffer;
	/** A symlink: where it points, as bytes. */
	target?: Buffer;
}

/** path (latin1) → entry. */
export type Manifest = Map<string, FolderEntry>;

/** What a file's lstat said when its hash was taken: the same again means the same content. */
export interface StatKey {
	ino: bigint;
	size: bigint;
	mtimeNs: bigint;
	ctimeNs: bigint;
}

/** Left out of the manifest: over the cap, unreadable, too deep. */
export interface Omitted {
	path: string;
	size: number;
	why: string;
}

export interface ScanOptions {
	/** Bytes of files the manifest may hold (the per-session cap). */
	maxBytes: number;
	/** The manifest last stored and the lstat each file's hash was taken at: an unchanged file is not read. */
	known: Manifest;
	stats: Map<string, StatKey>;
	/** Hands over each chunk read (its sha256 and bytes); awaited, so the caller can bound what it buffers. */
	chunk(hash: Buffer, content: Buffer): Promise<void>;
}

export interface ScanResult {
	entries: Manifest;
	stats: Map<string, StatKey>;
	/** Bytes of the files in `entries`. */
	bytes: number;
	/** Files read (their stat said they may have changed). */
	read: number;
	omitted: Omitted[];
	/** More than maxFolderEntries: the walk stopped; `omitted` does not name the rest. */
	truncated: boolean;
}

const dirFlags = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
const fileFlags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
/** A stat this recent may be followed by a write within the same clock tick: such a file is read again next time. */
const racyNs = 1_000_000_000n;

/** Reads the folder `cwd` into a manifest (see the module's comment). */
export async function scanFolder(cwd: string, options: ScanOptions): Promise<ScanResult> {
	const result: ScanResult = { entries: new Map(), stats: new Map(), bytes: 0, read: 0, omitted: [], truncated: false };
	const scan = { options, result, started: BigInt(Date.now()) * 1_000_000n, slices: new Slices() };
	const root = openFolder(cwd);
	try {
		await walk(root, "", 0, scan);
	} finally {
		closeSync(root);
	}
	return result;
}

interface Scan {
	options: ScanOptions;
	result: ScanResult;
	started: bigint;
	slices: Slices;
}

const attempt = <T>(call: () => T): T | undefined => {
	try {
		return call();
	} catch {
		return undefined;
	}
};

async function walk(dir: number, prefix: string, depth: number, scan: Scan): Promise<void> {
	const { result, slices } = scan;
	const names: Buffer[] = [];
	// Names as bytes (Node's types know only text encodings here; "buffer" works and keeps any byte).
	const listing = opendirSync(atFd(dir), { encoding: "buffer" as BufferEncoding });
	try {
		for (let entry = listing.readSync(); entry; entry = listing.readSync()) {
			names.push(entry.name as unknown as Buffer);
			await slices.tick();
		}
	} finally {
		listing.closeSync();
	}
	names.sort(Buffer.compare);
	for (const name of names) {
		await slices.tick();
		const stat = attempt(() => lstatSync(atFd(dir, name), { bigint: true }));
		const path = prefix + name.toString("latin1");
		if (!stat || isOwnTemp(name.toString("latin1"))) continue;
		if (!stat.isFile() && !stat.isDirectory() && !stat.isSymbolicLink()) continue; // FIFOs, sockets, devices
		if (result.entries.size >= maxFolderEntries) {
			result.truncated = true;
			return;
		}
		if (path.length > maxPathBytes || depth >= maxDepth) {
			result.omitted.push({ path, size: Number(stat.size), why: "too deep or too long a path" });
			continue;
		}
		const mode = Number(stat.mode) & 0o777;
		if (stat.isSymbolicLink()) {
			const target = attempt(() => readlinkSync(atFd(dir, name), { encoding: "buffer" }));
			if (target) result.entries.set(path, { kind: "l", mode, size: 0, target });
		} else if (stat.isDirectory()) {
			const child = attempt(() => openSync(atFd(dir, name), dirFlags));
			if (child === undefined) continue; // swapped for a link or removed since the lstat
			try {
				result.entries.set(path, { kind: "d", mode, size: 0 });
				await walk(child, `${path}/`, depth + 1, scan);
			} finally {
				closeSync(child);
			}
			if (result.truncated) return;
		} else await addFile(dir, name, path, stat, mode, scan);
	}
}

async function addFile(dir: number, name: Buffer, path: string, stat: BigIntStats, mode: number, scan: Scan) {
	const { options, result } = scan;
	const size = Number(stat.size);
	if (result.bytes + size > options.maxBytes) {
		result.omitted.push({ path, size, why: "over the folder's cap" });
		return;
	}
	const key: StatKey = { ino: stat.ino, size: stat.size, mtimeNs: stat.mtimeNs, ctimeNs: stat.ctimeNs };
	const known = options.known.get(path);
	const seen = options.stats.get(path);
	if (known?.kind === "f" && known.hash && seen && sameStat(seen, key)) {
		result.entries.set(path, { ...known, mode });
		result.stats.set(path, seen);
		result.bytes += known.size;
		return;
	}
	const read = await readFile(dir, name, stat, scan);
	if (typeof read === "string") {
		result.omitted.push({ path, size, why: read });
		return;
	}
	result.read++;
	result.entries.set(path, { kind: "f", mode, size: read.size, hash: read.hash, chunks: read.chunks });
	result.bytes += read.size;
	if (scan.started - key.ctimeNs > racyNs && scan.started - key.mtimeNs > racyNs) result.stats.set(path, key);
}

export const sameStat = (a: StatKey, b: StatKey) =>
	a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;

/** A regular file's content, chunk by chunk, up to the size it was listed with; or why it was skipped. */
async function readFile(
	dir: number,
	name: Buffer,
	stat: BigIntStats,
	scan: Scan,
): Promise<{ size: number; hash: Buffer; chunks: Buffer } | string> {
	let fd: number;
	try {
		fd = openSync(atFd(dir, name), fileFlags);
	} catch (error) {
		return `unreadable (${(error as NodeJS.ErrnoException).code})`;
	}
	try {
		// The name may have been swapped since the lstat (a FIFO opens at once with O_NONBLOCK): the same file or nothing.
		const now = fstatSync(fd, { bigint: true });
		if (!now.isFile() || now.ino !== stat.ino) return "replaced while it was read";
		const whole = createHash("sha256");
		const hashes: Buffer[] = [];
		const limit = Number(stat.size);
		let size = 0;
		while (size < limit) {
			const buffer = Buffer.allocUnsafe(Math.min(chunkBytes, limit - size));
			let filled = 0;
			for (let got = 1; got > 0 && filled < buffer.length; filled += got)
				got = readSync(fd, buffer, filled, buffer.length - filled, size + filled);
			if (filled === 0) break; // it shrank: what is there is the file
			const content = filled === buffer.length ? buffer : buffer.subarray(0, filled);
			const hash = createHash("sha256").update(content).digest();
			whole.update(content);
			hashes.push(hash);
			size += filled;
			await scan.options.chunk(hash, content);
			await scan.slices.tick(1, filled);
			if (filled < buffer.length) break;
		}
		return { size, hash: whole.digest(), chunks: Buffer.concat(hashes) };
	} catch (error) {
		return `unreadable (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`;
	} finally {
		closeSync(fd);
	}
}

/** A stored path a restore may use: relative, no empty, `.` or `..` component, no NUL (it came from a database). */
export const isSafePath = (path: string) =>
	path.length > 0 &&
	path.length <= maxPathBytes &&
	!path.includes("\0") &&
	path.split("/").every((part) => part !== "" && part !== "." && part !== "..");

/** A path as a person reads it (the bytes as UTF-8, invalid ones replaced). */
export const displayPath = (path: string) => Buffer.from(path, "latin1").toString("utf8");

/** The 32-byte chunk hashes of a file entry, as hex. */
export function chunkHashes(entry: FolderEntry): string[] {
	const out: string[] = [];
	const chunks = entry.chunks;
	if (!chunks) return out;
	for (let at = 0; at + 32 <= chunks.length; at += 32) out.push(chunks.subarray(at, at + 32).toString("hex"));
	return out;
}
