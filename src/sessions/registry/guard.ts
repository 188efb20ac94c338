import { closeSync, lstatSync, openSync, readlinkSync, readSync, realpathSync, type Stats } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import type { Config } from "../../config/config.ts";
import { maxImagesPerCommand, type PiCommand } from "../../pi/protocol.ts";
import { GatewayError } from "../../shared/errors.ts";
import { confine, isInside } from "../../shared/paths.ts";

/** Decoded size of base64 text, without decoding it. */
export function base64Bytes(data: string): number {
	const padding = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0;
	return Math.floor((data.length * 3) / 4) - padding;
}

/**
 * A pi session file a command names (switch_session's sessionPath, new_session's parentSession):
 * it must be a file in the session's own folder, symlinks followed. Whatever lies outside is
 * refused with the same answer, whether it exists or not, so nobody probes another session's files.
 */
function confineSessionFile(folder: string | undefined, path: string, what: string): string {
	if (folder === undefined) {
		throw new GatewayError(
			403,
			"session_file_not_own",
			`This session keeps no pi session files (persist:false), so ${what} cannot name one`,
		);
	}
	const notOwn = () =>
		new GatewayError(403, "session_file_not_own", `${what} must name a file in this session's own folder ${folder}`);
	const target = resolve(folder, path);
	if (!isInside(folder, target)) throw notOwn();
	let real: string;
	try {
		real = realpathSync(target);
	} catch {
		throw new GatewayError(400, "path_not_found", `${what} ${JSON.stringify(path)} does not exist`);
	}
	if (!isInside(realpathSync(folder), real)) throw notOwn();
	if (!lstatSync(real).isFile())
		throw new GatewayError(400, "not_a_file", `${what} ${JSON.stringify(path)} is no file`);
	return real;
}

/**
 * An output file: its folder must exist inside the workspace (symlinks followed), and so must the
 * file itself when it exists. pi writes with a plain writeFile, which follows a symlink in the last
 * component and writes through a hard link: a link to a file outside would be written outside.
 * This is a check before the write, not an atomic write: an agent that can run shell commands
 * could still swap a link in between; only the sandbox takes the outside out of its reach.
 */
function confineOutput(root: string, path: string, hops = 0): string {
	const target = resolve(root, path);
	const folder = confine(root, dirname(target), "outputPath's folder");
	const file = join(folder, basename(target));
	let stat: Stats;
	try {
		stat = lstatSync(file);
	} catch {
		return file; // a new file
	}
	const outside = () => new GatewayError(403, "path_outside_root", `outputPath must lie inside ${root}`);
	let real = file;
	if (stat.isSymbolicLink()) {
		try {
			real = realpathSync(file);
			stat = lstatSync(real);
		} catch {
			// Dangling: writing creates its target, so the target is judged like any output path.
			if (hops >= 8) throw outside();
			return confineOutput(root, resolve(dirname(file), readlinkSync(file)), hops + 1);
		}
		if (!isInside(realpathSync(root), real)) throw outside();
	}
	if (stat.isFile() && stat.nlink > 1) {
		throw new GatewayError(
			403,
			"path_outside_root",
			"outputPath has other hard links; writing it would change them too",
		);
	}
	return real;
}

/** The working folder a pi session file's header names (`{"type":"session",…,"cwd":…}`), if any. */
export function sessionFileCwd(file: string): string | undefined {
	let fd: number | undefined;
	try {
		fd = openSync(file, "r");
		const buffer = Buffer.alloc(64 * 1024);
		const read = readSync(fd, buffer, 0, buffer.length, 0);
		const first = buffer.toString("utf8", 0, read).split("\n", 1)[0] as string;
		const header = JSON.parse(first) as { type?: unknown; cwd?: unknown };
		return header.type === "session" && typeof header.cwd === "string" ? header.cwd : undefined;
	} catch {
		return undefined;
	} finally {
		if (fd !== undefined) closeSync(fd);
	}
}

/**
 * pi moves its working folder to the one a session file's header names when it switches to that
 * file: that folder must lie inside the workspace root like any session cwd. A folder that no longer
 * exists is judged by its path.
 */
function confineSessionCwd(root: string, file: string): void {
	const cwd = sessionFileCwd(file);
	if (cwd === undefined) return;
	try {
		confine(root, cwd, "The session file's cwd");
	} catch (error) {
		if (error instanceof GatewayError && error.status === 400 && isInside(root, resolve(cwd))) return;
		throw new GatewayError(
			403,
			"path_outside_root",
			`The session file's cwd ${JSON.stringify(cwd)} lies outside ${root}`,
		);
	}
}

/**
 * `resume` at create: pi starts in the folder the file's header names, so the file is held to the
 * same rule as switch_session.
 */
export function guardResume(config: Config, file: string): void {
	confineSessionCwd(config.workspaceRoot, file);
}

/**
 * The last check before a command reaches pi, whichever route it came by (typed routes or raw
 * /rpc): image sizes, and every path a command names resolved inside the allowed roots — session
 * files inside `folder`, the session's own (undefined: it keeps none). Returns the command with
 * its paths made real; throws 400/403/413 and nothing is sent.
 */
export function guardCommand(config: Config, command: PiCommand, folder?: string, cwd?: string): PiCommand {
	const images = command.images;
	// Typed routes and known raw types are held to it by their schema; a type this gateway does not know here.
	if (Array.isArray(images) && images.length > maxImagesPerCommand)
		throw new GatewayError(
			400,
			"too_many_images",
			`${images.length} images; a command may carry at most ${maxImagesPerCommand}`,
		);
	if (Array.isArray(images)) {
		for (const [index, image] of images.entries()) {
			const data = (image as { data?: unknown } | null)?.data;
			if (typeof data !== "string") continue;
			const bytes = base64Bytes(data);
			if (bytes > config.maxImageBytes) {
				throw new GatewayError(
					413,
					"image_too_large",
					`Image ${index} is ${bytes} bytes; images are limited to ${config.maxImageBytes} bytes`,
				);
			}
		}
	}
	const out = { ...command };
	// The session's own folder: the sandbox shows pi nothing else, and a path taken against the whole
	// root let one tenant's export overwrite another's file where pi runs unconfined.
	const root = cwd ?? config.workspaceRoot;
	if (typeof out.outputPath === "string") out.outputPath = confineOutput(root, out.outputPath);
	for (const key of ["sessionPath", "parentSession"] as const) {
		const value = out[key];
		// Its own folder only: another session's file would be read, and written by two pi processes.
		if (typeof value === "string") out[key] = confineSessionFile(folder, value, key);
	}
	if (command.type === "switch_session" && typeof out.sessionPath === "string")
		confineSessionCwd(root, out.sessionPath);
	return out;
}
