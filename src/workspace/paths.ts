import type { Dir } from "node:fs";
import { constants } from "node:fs";
import { type FileHandle, lstat, open, opendir, readlink, realpath } from "node:fs/promises";
import { isAbsolute, posix } from "node:path";
import { GatewayError } from "../shared/errors.ts";
import { isInside } from "../shared/paths.ts";

/**
 * The one way a user string becomes a file of a session's folder. Every workspace route goes
 * through here, so one table of attacks (test/unit/workspace-paths.test.ts) covers them all.
 *
 * Two steps: `resolveWorkspacePath` checks the string and resolves symlinks (the last component
 * too) against the folder's real path; `openInside` opens without following a last symlink and
 * then asks the kernel which file the descriptor really is (/proc/self/fd), so a symlink swapped
 * in between the check and the open (the agent runs at the same time) is caught after the fact
 * instead of trusted before it.
 */

/** 403 problem: the string names something outside the session's folder. */
export const outside = (path: string, why: string) =>
	new GatewayError(403, "path_outside_root", `${JSON.stringify(path)} is outside the session's folder (${why})`);

export const notFound = (path: string) =>
	new GatewayError(404, "path_not_found", `No file or folder ${JSON.stringify(path)} in the session's folder`);

export interface WorkspacePath {
	/** Relative to the folder, "/"-separated, "" for the folder itself. */
	rel: string;
	/** The folder's real path (symlinks resolved). */
	root: string;
	/** Where it is on disk (the folder's real path joined with `rel`; symlinks inside not resolved). */
	abs: string;
}

const maxPathChars = 4096;

/** Syntax only: relative, no NUL, no `..` above the folder. Throws 403 (400 for a non-path). */
export function normalizeWorkspacePath(path: string): string {
	if (path.length > maxPathChars)
		throw new GatewayError(400, "invalid_input", `path: at most ${maxPathChars} characters`);
	if (path.includes("\0")) throw outside(path, "a NUL byte");
	if (path.includes("\\")) throw outside(path, "a backslash (paths are /-separated)");
	if (isAbsolute(path) || path.startsWith("/")) throw outside(path, "an absolute path");
	const normal = posix.normalize(path === "" ? "." : path).replace(/\/+$/, "");
	if (normal === ".." || normal.startsWith("../")) throw outside(path, "`..` leaves it");
	return normal === "." ? "" : normal;
}

export { isInside };

/** Where an open descriptor can be reached by path: the kernel's name for it, never re-resolved. */
export const viaFd = (fd: number, name?: string) => `/proc/self/fd/${fd}${name === undefined ? "" : `/${name}`}`;

/**
 * The session's folder, as it was checked at create (a real path); 404 when it is gone (removed
 * under a stopped session), 409 when its path now leads elsewhere: a folder on the way replaced by
 * a link (an agent can flip names in a folder it writes, and a session may work below it) would
 * otherwise make every files route work in wherever the link points.
 */
export async function folderOf(cwd: string): Promise<string> {
	let real: string;
	try {
		real = await realpath(cwd);
	} catch (error) {
		if ((error as NodeJS.ErrnoException).code === "ENOENT") throw notFound("");
		throw error;
	}
	if (real !== cwd)
		throw new GatewayError(
			409,
			"folder_replaced",
			// Where it leads is not said: that would tell the caller where any link on the host points.
			`The session's folder ${JSON.stringify(cwd)} leads elsewhere now: a folder on its path was replaced by a link`,
		);
	return real;
}

/**
 * A folder under `root` for a walk (search, archive), read through its descriptor once the kernel
 * says it is inside: a folder swapped for a symlink out during the walk is skipped, not followed.
 */
export async function openFolderInside(root: string, rel: string): Promise<Dir | undefined> {
	let handle: FileHandle | undefined;
	try {
		handle = await open(
			rel ? `${root}/${rel}` : root,
			constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW,
		);
		const real = await fdPath(handle);
		if (real !== undefined && !isInside(root, real)) return undefined;
		return await opendir(real === undefined ? `${root}/${rel}` : viaFd(handle.fd));
	} catch {
		return undefined;
	} finally {
		// opendir holds a descriptor of its own.
		await handle?.close();
	}
}

/**
 * `path` inside `cwd`, symlinks resolved: existing paths by their real path, a path that does not
 * exist yet by its deepest existing ancestor (what a write would create lies under it).
 */
export async function resolveWorkspacePath(cwd: string, path: string): Promise<WorkspacePath> {
	const rel = normalizeWorkspacePath(path);
	const root = await folderOf(cwd);
	const abs = rel === "" ? root : `${root}/${rel}`;
	let probe = abs;
	for (;;) {
		try {
			const real = await realpath(probe);
			if (!isInside(root, real)) throw outside(path, "a symlink leads out of it");
			return { rel, root, abs };
		} catch (error) {
			if (error instanceof GatewayError) throw error;
			const code = (error as NodeJS.ErrnoException).code;
			if (code === "ELOOP") throw outside(path, "a symlink loop");
			// A dangling symlink: where it points cannot be checked, so it is not followed.
			if (code === "ENOENT" && probe === abs && (await isSymlink(abs))) throw outside(path, "a dangling symlink");
			if (code !== "ENOENT" && code !== "ENOTDIR") throw error;
			if (probe === root) throw error;
			probe = probe.slice(0, probe.lastIndexOf("/"));
		}
	}
}

async function isSymlink(path: string): Promise<boolean> {
	return (await lstat(path).catch(() => undefined))?.isSymbolicLink() ?? false;
}

/** The real path of an open descriptor, from the kernel; undefined where /proc is missing. */
export async function fdPath(handle: FileHandle): Promise<string | undefined> {
	try {
		return (await readlink(`/proc/self/fd/${handle.fd}`)).replace(/ \(deleted\)$/, "");
	} catch {
		return undefined;
	}
}

/**
 * Opens a resolved path for reading (files and folders), following symlinks inside the folder
 * only: the real path is opened with O_NOFOLLOW and the descriptor checked to be inside.
 */
export async function openInside(target: WorkspacePath, original: string): Promise<FileHandle> {
	let real: string;
	try {
		real = await realpath(target.abs);
	} catch (error) {
		const code = (error as NodeJS.ErrnoException).code;
		// A file where a folder should be (`file/x`) is no such path; a loop leads nowhere inside.
		if (code === "ENOENT" || code === "ENOTDIR") throw notFound(original);
		if (code === "ELOOP") throw outside(original, "a symlink loop");
		throw error;
	}
	if (!isInside(target.root, real)) throw outside(original, "a symlink leads out of it");
	let handle: FileHandle;
	try {
		handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
	} catch (error) {
		const code = (error as NodeJS.ErrnoException).code;
		if (code === "ELOOP") throw outside(original, "it became a symlink while it was opened");
		if (code === "ENOENT") throw notFound(original);
		throw error;
	}
	await assertOpenedInside(handle, target.root, original);
	return handle;
}

/** Closes and refuses a descriptor that turned out to be outside the folder (a race lost). */
export async function assertOpenedInside(handle: FileHandle, root: string, original: string): Promise<void> {
	const opened = await fdPath(handle);
	if (opened === undefined || isInside(root, opened)) return;
	await handle.close();
	throw outside(original, "a folder on the way was swapped for a symlink");
}
