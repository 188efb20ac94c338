import { closeSync, constants, fstatSync, openSync, readlinkSync, readSync, realpathSync } from "node:fs";
import { isAbsolute, relative, resolve } from "node:path";
import { GatewayError } from "./errors.ts";

// Path rules the sessions' rooms share (spawn, areas, the sandbox, the guard, retention, the session's
// folder bind).
/** True when `child` (already real) is `root` or lies below it. */
export function isInside(root: string, child: string): boolean {
	const rel = relative(root, child);
	return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/** Resolves a user path (symlinks followed) and insists it stays inside `root`. */
export function confine(root: string, path: string, what: string): string {
	const realRoot = realpathSync(root);
	let real: string;
	try {
		real = realpathSync(resolve(realRoot, path));
	} catch {
		throw new GatewayError(400, "path_not_found", `${what} ${JSON.stringify(path)} does not exist`);
	}
	if (!isInside(realRoot, real))
		throw new GatewayError(403, "path_outside_root", `${what} must lie inside ${realRoot}`);
	return real;
}

/**
 * Opens the folder a session works in for a bind by descriptor (`bwrap --bind-fd`): what pi gets
 * is the folder that was checked, not whatever the path names when bwrap gets to it. The kernel's
 * name for the open descriptor must be the checked real path: a component swapped for a symlink
 * between the check and here (an agent can flip names in a folder it writes) is refused.
 */
export function openCheckedFolder(path: string, root: string): number {
	let fd: number;
	try {
		fd = openSync(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
	} catch (error) {
		throw new GatewayError(
			409,
			"folder_replaced",
			`The session's folder ${JSON.stringify(path)} cannot be opened as a folder (${(error as NodeJS.ErrnoException).code}): was it removed or replaced by a link?`,
		);
	}
	let real: string | undefined;
	try {
		real = readlinkSync(`/proc/self/fd/${fd}`);
	} catch {}
	if (real !== path || !isInside(root, real)) {
		closeSync(fd);
		throw new GatewayError(
			409,
			"folder_replaced",
			`The session's folder ${JSON.stringify(path)} was replaced by a link while it was opened`,
		);
	}
	return fd;
}

/**
 * The first `max` bytes of a regular file an agent can write (its session file, its agent folder's
 * settings and the relay's files in it), or undefined: never through a link, and never blocking the gateway's event loop on a
 * FIFO put in its place (opened non-blocking, and only a regular file is read).
 */
export function readAgentFile(path: string, max: number): Buffer | undefined {
	let fd: number;
	try {
		fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
	} catch {
		return undefined;
	}
	try {
		const stat = fstatSync(fd);
		if (!stat.isFile()) return undefined;
		const buffer = Buffer.allocUnsafe(Math.min(max, stat.size));
		return buffer.subarray(0, readSync(fd, buffer, 0, buffer.length, 0));
	} catch {
		return undefined;
	} finally {
		closeSync(fd);
	}
}
