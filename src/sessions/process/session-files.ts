import { randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, renameSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import type { Config } from "../../config/config.ts";

/**
 * Where pi keeps the gateway's session files: one folder per pi process the gateway starts,
 * `<dataDir>/pi-sessions/<folder>/`, handed to pi as its --session-dir. A sandboxed pi sees only
 * its own folder, so no session can read or rewrite another's conversation. Files of the older
 * flat layout (directly in pi-sessions/) are still found, and moved into a folder of their own
 * when a session starts on them.
 */
export function piSessionDir(config: Config): string {
	return join(config.dataDir, "pi-sessions");
}

/** A new, empty folder for one pi process's session files. */
export function newSessionFolder(config: Config): string {
	const folder = join(piSessionDir(config), `${Date.now().toString(36)}-${randomBytes(6).toString("hex")}`);
	mkdirSync(folder, { recursive: true });
	return folder;
}

const fileId = (name: string) => /_([0-9a-fA-F-]+)\.jsonl$/.exec(name)?.[1];

/** Every kept session file whose pi id starts with `idPrefix` (pi's --session takes a prefix too). */
export function findSessionFiles(config: Config, idPrefix: string): string[] {
	const root = piSessionDir(config);
	const found: string[] = [];
	const scan = (dir: string, depth: number) => {
		let entries: import("node:fs").Dirent[];
		try {
			entries = readdirSync(dir, { withFileTypes: true });
		} catch {
			return;
		}
		for (const entry of entries) {
			if (entry.isDirectory() && depth === 0) scan(join(dir, entry.name), 1);
			else if (entry.isFile() && fileId(entry.name)?.startsWith(idPrefix)) found.push(join(dir, entry.name));
		}
	};
	scan(root, 0);
	return found;
}

/**
 * The folder of its own a session file lies in (`<dataDir>/pi-sessions/<folder>/`), or undefined
 * for a file of the flat layout or anywhere else: a session may be pointed only at files there.
 */
export function ownFolder(config: Config, file: string | undefined): string | undefined {
	if (file === undefined) return undefined;
	const folder = dirname(file);
	return dirname(folder) === piSessionDir(config) ? folder : undefined;
}

/**
 * The folder a pi process resuming `file` works in: the file's own folder, or, for a file of the
 * flat layout, a new folder the file is moved into first (so the process never sees the others).
 * Returns the file's path as it is after that.
 */
export function folderFor(config: Config, file: string): { folder: string; file: string } {
	if (dirname(file) !== piSessionDir(config)) return { folder: dirname(file), file };
	const folder = newSessionFolder(config);
	const moved = join(folder, basename(file));
	renameSync(file, moved);
	return { folder, file: moved };
}

/**
 * The same pi session file under this node's data dir: a record written by another node names
 * its own `<dataDir>/pi-sessions/<folder>/<file>` (cluster mode), and the folder layout is the same.
 */
export function localSessionFile(config: Config, file: string): string {
	const marker = "/pi-sessions/";
	const at = file.lastIndexOf(marker);
	return at < 0 ? file : join(piSessionDir(config), file.slice(at + marker.length));
}
