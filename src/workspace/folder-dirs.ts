import { closeSync, constants, fchmodSync, mkdirSync, opendirSync, openSync, readlinkSync } from "node:fs";
import { isAbsolute, relative, sep } from "node:path";
import { openCheckedFolder } from "../shared/paths.ts";

/**
 * Folders opened (and made, for a restore) by descriptor for folder-scan.ts and folder-restore.ts:
 * each component through its parent's descriptor with O_NOFOLLOW, so a link where a folder should
 * be is never gone through.
 */

export class FolderGoneError extends Error {}

/** `/proc/self/fd/N/name`: `name` looked up in the folder the descriptor holds, never re-resolved from a path. */
export const atFd = (fd: number, name?: Buffer) =>
	name ? Buffer.concat([Buffer.from(`/proc/self/fd/${fd}/`), name]) : Buffer.from(`/proc/self/fd/${fd}`);

/**
 * Opens `path` (a real path, checked when the session was made) as a folder, and insists that the
 * kernel's name for what was opened is that path: a folder on the way replaced by a link is refused.
 */
export function openFolder(path: string): number {
	let fd: number;
	try {
		fd = openSync(path, dirFlags);
	} catch (error) {
		throw new FolderGoneError(
			`the folder ${JSON.stringify(path)} cannot be opened (${(error as NodeJS.ErrnoException).code})`,
		);
	}
	let real: string | undefined;
	try {
		real = readlinkSync(`/proc/self/fd/${fd}`);
	} catch {}
	if (real !== path) {
		closeSync(fd);
		throw new FolderGoneError(`the folder ${JSON.stringify(path)} now leads to ${JSON.stringify(real)}`);
	}
	return fd;
}

/**
 * Syscalls are made synchronously (an asynchronous lstat costs a trip through the thread pool: a
 * 10,000-file folder took 0.6 s to find unchanged), in slices: the event loop gets a turn after
 * every `sliceOps` calls or `sliceBytes` read, so other sessions' events are not held up.
 */
export class Slices {
	#ops = 0;
	#bytes = 0;
	async tick(ops = 1, bytes = 0): Promise<void> {
		this.#ops += ops;
		this.#bytes += bytes;
		if (this.#ops < sliceOps && this.#bytes < sliceBytes) return;
		this.#ops = 0;
		this.#bytes = 0;
		await new Promise<void>((resolve) => setImmediate(resolve));
	}
}
const sliceOps = 256;
const sliceBytes = 4 * 1024 * 1024;

const dirFlags = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** A folder `name` in the open folder `dir`, opened by descriptor; undefined when it is not a real folder. */
export function openIn(dir: number, name: Buffer): number | undefined {
	try {
		return openSync(atFd(dir, name), dirFlags);
	} catch {
		return undefined;
	}
}

/**
 * Makes `cwd` (inside `root`, both real paths) one component at a time from the root, never
 * through a link, and returns it open. Throws when a link or a file stands in its way.
 */
export function makeFolder(root: string, cwd: string): number {
	const rel = relative(root, cwd);
	if (rel.startsWith("..") || isAbsolute(rel)) throw new Error(`${cwd} is not inside ${root}`);
	let dir = openFolder(root);
	try {
		for (const part of rel === "" ? [] : rel.split(sep)) {
			const at = atFd(dir, Buffer.from(part));
			try {
				// Areas and sessions' folders are the gateway's to make: its own, closed to others (as areas.ts makes them).
				mkdirSync(at, { mode: 0o700 });
			} catch (error) {
				if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
			}
			let next: number;
			try {
				next = openSync(at, dirFlags);
			} catch (error) {
				const code = (error as NodeJS.ErrnoException).code;
				throw new Error(
					code === "ELOOP" || code === "ENOTDIR"
						? `${JSON.stringify(part)} on the way to the folder is a link or a file`
						: `${JSON.stringify(part)} cannot be opened (${code})`,
				);
			}
			closeSync(dir);
			dir = next;
		}
		return dir;
	} catch (error) {
		closeSync(dir);
		throw error;
	}
}

/** The folder of a path, opened by descriptor from the base (the last one kept open: siblings share it). */
export class ParentCache {
	readonly #base: number;
	#last: { path: string; dir: number } | undefined;
	constructor(base: number) {
		this.#base = base;
	}

	/** The open folder `path` lies in and its own name; undefined when a component is not a real folder. */
	open(path: string): { dir: number; name: Buffer } | undefined {
		const cut = path.lastIndexOf("/");
		const name = Buffer.from(path.slice(cut + 1), "latin1");
		if (cut < 0) return { dir: this.#base, name };
		const folder = path.slice(0, cut);
		if (this.#last?.path === folder) return { dir: this.#last.dir, name };
		let dir = this.#base;
		for (const part of folder.split("/")) {
			const next = openIn(dir, Buffer.from(part, "latin1"));
			if (dir !== this.#base) closeSync(dir);
			if (next === undefined) return undefined;
			dir = next;
		}
		this.close();
		this.#last = { path: folder, dir };
		return { dir, name };
	}

	close(): void {
		if (this.#last) closeSync(this.#last.dir);
		this.#last = undefined;
	}
}

/** chmod of a folder in `dir`, by its descriptor (chmod by path would follow a link put in its place). */
export function chmodAt(dir: number, name: Buffer, mode: number): void {
	const fd = openIn(dir, name);
	if (fd === undefined) return;
	try {
		fchmodSync(fd, mode);
	} catch {
	} finally {
		closeSync(fd);
	}
}

/** Whether the folder (opened as the sandbox opens it: no link followed) holds nothing; false when it cannot be read. */
export function emptyFolder(path: string): boolean {
	let fd: number;
	try {
		fd = openCheckedFolder(path, path);
	} catch {
		return false; // git's own run says why (409 folder_replaced)
	}
	try {
		// One entry is enough to know (a folder of a million would hold the event loop for seconds).
		const dir = opendirSync(`/proc/self/fd/${fd}`);
		try {
			return dir.readSync() === null;
		} finally {
			dir.closeSync();
		}
	} catch {
		return false;
	} finally {
		closeSync(fd);
	}
}
