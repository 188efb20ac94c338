import {
	type BigIntStats,
	closeSync,
	constants,
	fchmodSync,
	fstatSync,
	futimesSync,
	lstatSync,
	mkdirSync,
	opendirSync,
	openSync,
	readlinkSync,
	readSync,
	symlinkSync,
	unlinkSync,
	writeSync,
} from "node:fs";
import { GatewayError } from "../shared/errors.ts";
import { atFd, makeFolder, openFolder, openIn, Slices } from "./folder-dirs.ts";
import { displayPath, isOwnTemp, maxFolderEntries } from "./folder-scan.ts";

/**
 * A session's folder copied into a new one (a fork: POST /v1/sessions/{id}/fork-session). The
 * source is the agent's and hostile, so it is read as folder-scan.ts reads it: every folder opened
 * through its parent's descriptor with O_NOFOLLOW, links read as links, a file swapped between its
 * lstat and its open skipped, FIFOs, sockets and devices skipped. The copy is made the same way
 * (folder-restore.ts): folders made and opened by descriptor, files created O_EXCL|O_NOFOLLOW.
 *
 * A symlink is copied, as a link, only when it stays inside the copy: a relative target whose `..`s
 * come first and climb no higher than the link's own folder (`node_modules/.bin/x ->
 * ../x/cli.js`, `current -> releases/2`). A link that is absolute or climbs out (`/etc/passwd`,
 * `../../@bob/…`, `a/../../x`) is skipped and named in the answer: where it points is never
 * looked at, the gateway's side or the new session's.
 *
 * Bounded: the source is measured first (lstat only) and refused with 413 `folder_too_large` past
 * `maxBytes` of file content or maxFolderEntries entries, before anything is written; the copy
 * counts again (a file that grew since is refused the same way). Permission bits are kept (0o777:
 * no set-id bit), and files' times.
 */

export interface FolderCopy {
	files: number;
	folders: number;
	links: number;
	/** Bytes of file content copied. */
	bytes: number;
	/** Entries left out: links leading out, FIFOs, sockets, devices, unreadable or replaced ones. */
	skipped: number;
	/** The first skippedListed of them, each with why. */
	skippedPaths: { path: string; why: string }[];
}

const skippedListed = 100;
const maxDepth = 256;
const maxPathBytes = 4096;
const chunkBytes = 1024 * 1024;
const dirFlags = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
const readFlags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const writeFlags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

interface Walk {
	maxBytes: number;
	/** The copy's own folder (device, inode), never copied into itself when it lies in the source. */
	own?: { dev: bigint; ino: bigint };
	report: FolderCopy;
	entries: number;
	slices: Slices;
}

/** Copies the folder `from` into `to` (a new folder inside `root`, made here); see the module's comment. */
export async function copyFolder(from: string, to: string, root: string, maxBytes: number): Promise<FolderCopy> {
	const report = (): FolderCopy => ({ files: 0, folders: 0, links: 0, bytes: 0, skipped: 0, skippedPaths: [] });
	const source = openSource(from);
	try {
		const measure: Walk = { maxBytes, report: report(), entries: 0, slices: new Slices() };
		await walk(source, undefined, "", 0, measure);
		const target = makeTarget(root, to);
		try {
			const stat = fstatSync(target, { bigint: true });
			const copy: Walk = { ...measure, own: stat, report: report(), entries: 0 };
			await walk(source, target, "", 0, copy);
			return copy.report;
		} finally {
			closeSync(target);
		}
	} finally {
		closeSync(source);
	}
}

function openSource(from: string): number {
	try {
		return openFolder(from);
	} catch (error) {
		throw new GatewayError(
			409,
			"folder_replaced",
			`The session's folder cannot be copied: ${(error as Error).message}`,
		);
	}
}

function makeTarget(root: string, to: string): number {
	try {
		return makeFolder(root, to);
	} catch (error) {
		throw new GatewayError(
			409,
			"folder_replaced",
			`The new session's folder cannot be made: ${(error as Error).message}`,
		);
	}
}

/** One folder: measured (`dst` undefined) or copied into `dst`. */
async function walk(src: number, dst: number | undefined, prefix: string, depth: number, w: Walk): Promise<void> {
	const names: Buffer[] = [];
	const listing = opendirSync(atFd(src), { encoding: "buffer" as BufferEncoding });
	try {
		for (let entry = listing.readSync(); entry; entry = listing.readSync()) {
			names.push(entry.name as unknown as Buffer);
			if (w.entries + names.length > maxFolderEntries) throw tooManyEntries();
			await w.slices.tick();
		}
	} finally {
		listing.closeSync();
	}
	names.sort(Buffer.compare);
	for (const name of names) {
		await w.slices.tick();
		const path = prefix + name.toString("latin1");
		const stat = attempt(() => lstatSync(atFd(src, name), { bigint: true }));
		if (!stat || isOwnTemp(name.toString("latin1"))) continue;
		if (++w.entries > maxFolderEntries) throw tooManyEntries();
		if (path.length > maxPathBytes || depth >= maxDepth) skip(w, path, "too deep or too long a path");
		else if (stat.isDirectory()) await folder(src, dst, name, path, stat, depth, w);
		else if (stat.isSymbolicLink()) link(src, dst, name, path, w);
		else if (stat.isFile()) await file(src, dst, name, path, stat, w);
		else skip(w, path, "not a file, folder or link (a FIFO, socket or device)");
	}
}

async function folder(
	src: number,
	dst: number | undefined,
	name: Buffer,
	path: string,
	stat: BigIntStats,
	depth: number,
	w: Walk,
) {
	const child = openIn(src, name);
	if (child === undefined) return skip(w, path, "replaced or unreadable while it was copied");
	let made: number | undefined;
	try {
		const now = fstatSync(child, { bigint: true });
		if (w.own && now.dev === w.own.dev && now.ino === w.own.ino) return; // the copy itself
		if (dst !== undefined) {
			made = attempt(() => {
				mkdirSync(atFd(dst, name), { mode: 0o700 });
				return openSync(atFd(dst, name), dirFlags);
			});
			if (made === undefined) return skip(w, path, "could not be made in the copy");
		}
		w.report.folders++;
		await walk(child, made, `${path}/`, depth + 1, w);
		// Its mode once it is filled: a read-only folder is written before it becomes one.
		if (made !== undefined) fchmodSync(made, Number(stat.mode) & 0o777);
	} finally {
		closeSync(child);
		if (made !== undefined) closeSync(made);
	}
}

function link(src: number, dst: number | undefined, name: Buffer, path: string, w: Walk) {
	const target = attempt(() => readlinkSync(atFd(src, name), { encoding: "buffer" }));
	if (!target) return skip(w, path, "replaced or unreadable while it was copied");
	if (!staysInside(path, target)) return skip(w, path, "a link that leads out of the folder");
	if (dst !== undefined && attempt(() => symlinkSync(target, atFd(dst, name)) ?? true) === undefined)
		return skip(w, path, "could not be made in the copy");
	w.report.links++;
}

/**
 * Whether a link at `path` (relative to the folder) pointing at `target` resolves inside the folder
 * without looking at anything: relative, its `..`s first and no more than the folders above it,
 * then only names going down (each of them a folder of the copy, or a link checked the same way).
 */
export function staysInside(path: string, target: Buffer): boolean {
	const text = target.toString("latin1");
	if (text === "" || text.startsWith("/") || text.includes("\0")) return false;
	let up = 0;
	let down = false;
	for (const part of text.split("/")) {
		if (part === "" || part === ".") continue;
		if (part !== "..") down = true;
		else if (down) return false;
		else up++;
	}
	return up <= path.split("/").length - 1;
}

async function file(src: number, dst: number | undefined, name: Buffer, path: string, stat: BigIntStats, w: Walk) {
	const size = Number(stat.size);
	if (w.report.bytes + size > w.maxBytes) throw tooLarge(`more than ${w.maxBytes} bytes of files`);
	if (dst === undefined) {
		w.report.files++;
		w.report.bytes += size;
		return;
	}
	const from = attempt(() => openSync(atFd(src, name), readFlags));
	if (from === undefined) return skip(w, path, "unreadable");
	let to: number | undefined;
	try {
		// The name may have been swapped since the lstat: the same file or nothing.
		const now = fstatSync(from, { bigint: true });
		if (!now.isFile() || now.ino !== stat.ino) return skip(w, path, "replaced while it was copied");
		to = attempt(() => openSync(atFd(dst, name), writeFlags, 0o600));
		if (to === undefined) return skip(w, path, "could not be made in the copy");
		w.report.bytes += await copyBytes(from, to, size, w.slices);
		fchmodSync(to, Number(stat.mode) & 0o777);
		futimesSync(to, Number(stat.atimeNs) / 1e9, Number(stat.mtimeNs) / 1e9);
		w.report.files++;
	} catch (error) {
		// Half a file is not passed off as the file.
		if (to !== undefined) attempt(() => unlinkSync(atFd(dst, name)));
		skip(w, path, `not copied (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
	} finally {
		closeSync(from);
		if (to !== undefined) closeSync(to);
	}
}

/** Up to `size` bytes (what the file had when it was listed), a chunk at a time; the bytes copied. */
async function copyBytes(from: number, to: number, size: number, slices: Slices): Promise<number> {
	const buffer = Buffer.allocUnsafe(Math.min(chunkBytes, Math.max(size, 1)));
	let copied = 0;
	for (let got = 1; got > 0 && copied < size; copied += got) {
		got = readSync(from, buffer, 0, Math.min(buffer.length, size - copied), copied);
		for (let put = 0; put < got; ) put += writeSync(to, buffer, put, got - put, copied + put);
		await slices.tick(1, got);
	}
	return copied;
}

function skip(w: Walk, path: string, why: string): void {
	w.report.skipped++;
	if (w.report.skippedPaths.length < skippedListed) w.report.skippedPaths.push({ path: displayPath(path), why });
}

const tooManyEntries = () => tooLarge(`more than ${maxFolderEntries} files, folders and links`);
const tooLarge = (what: string) =>
	new GatewayError(
		413,
		"folder_too_large",
		`The session's folder holds ${what}: a fork copies at most that (--workspace-max-fork-bytes)`,
	);

function attempt<T>(call: () => T): T | undefined {
	try {
		return call();
	} catch {
		return undefined;
	}
}
