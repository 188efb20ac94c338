import { randomBytes } from "node:crypto";
import { lstatSync, mkdirSync, realpathSync } from "node:fs";
import { readFile, rename, unlink, writeFile } from "node:fs/promises";
import { basename, dirname, join, posix, resolve } from "node:path";
import type { Config } from "../config/config.ts";
import { isInside } from "../shared/paths.ts";

/**
 * Where a session taken over from another node works on this one. The stored cwd names the old
 * node's disk (`/…/n1/workspaces/@alice/ses_…`): it is re-rooted under this node's workspace root
 * at the same place below the root, and the stored path below the root is checked like a user's
 * (relative, no `..`, inside the root once joined), never trusted. An operator's shared folder (an
 * explicit --workspace-root the session's folder exists in here already) is used as it is.
 */
export interface Placement {
	cwd: string;
	/** Restore the stored copy into it (false: the folder is here already, a shared root). */
	restore: boolean;
	/** The session's own folder (`<area>/<session id>`): stored files replace differing ones. */
	own: boolean;
	/** The stored path was refused (why); the session gets a folder of its own instead. */
	refused?: string;
}

/** The root below which the gateway makes folders: the default one in the data dir, or the operator's. */
export const isDefaultRoot = (config: Config) => config.workspaceRoot === resolve(config.dataDir, "workspaces");

/** The workspace root as the sessions' cwds name it (real), made if missing. */
export function realRoot(config: Config): string {
	mkdirSync(config.workspaceRoot, { recursive: true });
	return realpathSync(config.workspaceRoot);
}

/** The stored folder's path below its node's root, checked: "" for the root itself, undefined when refused. */
export function checkedRel(rel: string): string | undefined {
	if (rel === "") return "";
	if (rel.length > 4096 || rel.includes("\0") || rel.includes("\\") || rel.startsWith("/")) return undefined;
	const normal = posix.normalize(rel);
	if (normal !== rel || normal === "." || normal === ".." || normal.startsWith("../")) return undefined;
	return normal;
}

/**
 * The folder's path below the old node's root, without a stored copy to say it: the default
 * layout's `<data-dir>/workspaces/…` is recognised; anything else is unknown.
 */
function guessRel(cwd: string): string | undefined {
	const marker = "/workspaces/";
	const at = cwd.lastIndexOf(marker);
	if (at >= 0) return cwd.slice(at + marker.length);
	return cwd.endsWith("/workspaces") ? "" : undefined;
}

export function placeFolder(
	config: Config,
	record: { id: string; cwd: string; options: { cwd?: string } },
	stored: { rel: string } | undefined,
): Placement {
	const root = realRoot(config);
	const ownName = (cwd: string) => record.options.cwd === undefined && basename(cwd) === record.id;
	if (!isDefaultRoot(config) && isInside(root, record.cwd) && isRealFolder(record.cwd))
		return { cwd: record.cwd, restore: false, own: ownName(record.cwd) };
	const given = stored?.rel ?? guessRel(record.cwd);
	const rel = given === undefined ? undefined : checkedRel(given);
	const cwd = rel === undefined ? undefined : rel === "" ? root : join(root, rel);
	if (cwd === undefined || !isInside(root, cwd)) {
		const fallback = join(root, record.id);
		const why =
			given === undefined
				? `no stored path for ${JSON.stringify(record.cwd)}`
				: `the stored path ${JSON.stringify(given)} is not a folder inside the workspace root`;
		return { cwd: fallback, restore: false, own: true, refused: why };
	}
	return { cwd, restore: true, own: ownName(cwd) };
}

function isRealFolder(path: string): boolean {
	try {
		return lstatSync(path).isDirectory() && realpathSync(path) === path;
	} catch {
		return false;
	}
}

/**
 * pi resumes a conversation in the folder its session file's header names (`{"type":"session",
 * "cwd":…}`, the first line): the copy written back from the database names the old node's folder,
 * so it is made to name the folder the session works in here. The gateway's own node-local copy of
 * pi's file; the database's copy is refreshed from it at the next settled run. False when unchanged.
 */
export async function rehomeSessionFile(file: string, cwd: string): Promise<boolean> {
	let content: Buffer;
	try {
		content = await readFile(file);
	} catch {
		return false; // none yet: pi starts a new conversation in the folder it is given
	}
	const end = content.indexOf(10);
	const first = content.subarray(0, end < 0 ? content.length : end).toString("utf8");
	let header: Record<string, unknown>;
	try {
		header = JSON.parse(first);
	} catch {
		return false;
	}
	if (header?.type !== "session" || typeof header.cwd !== "string" || header.cwd === cwd) return false;
	const rest = end < 0 ? Buffer.alloc(0) : content.subarray(end);
	const temp = join(dirname(file), `.rehome-${randomBytes(6).toString("hex")}`);
	try {
		await writeFile(temp, Buffer.concat([Buffer.from(JSON.stringify({ ...header, cwd })), rest]), { mode: 0o600 });
		await rename(temp, file);
	} catch (error) {
		await unlink(temp).catch(() => {});
		throw error;
	}
	return true;
}
