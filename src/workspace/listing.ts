import { lstat, opendir } from "node:fs/promises";
import { GatewayError } from "../shared/errors.ts";
import { openInside, resolveWorkspacePath, viaFd } from "./paths.ts";

export type EntryType = "file" | "dir" | "symlink" | "other";

export interface Entry {
	name: string;
	path: string;
	type: EntryType;
	size: number;
	modifiedAt: string;
}

/** Names read from one folder at most: a page is sorted by name, so every name is read first (names only). */
export const maxFolderEntries = 100_000;

export function typeOf(stat: { isFile(): boolean; isDirectory(): boolean; isSymbolicLink(): boolean }): EntryType {
	if (stat.isSymbolicLink()) return "symlink";
	if (stat.isDirectory()) return "dir";
	return stat.isFile() ? "file" : "other";
}

/**
 * One page of a folder, sorted by name (bytewise, so a page boundary never moves). Symlinks are
 * listed as symlinks, not followed. The folder is read through its descriptor, so what is listed
 * is the folder that was checked.
 */
export async function listFolder(
	cwd: string,
	path: string,
	page: { limit: number; offset: number },
): Promise<{ path: string; entries: Entry[]; nextCursor: string | null }> {
	const target = await resolveWorkspacePath(cwd, path);
	const handle = await openInside(target, path);
	try {
		if (!(await handle.stat()).isDirectory())
			throw new GatewayError(400, "not_a_folder", `${JSON.stringify(path)} is a file, not a folder`);
		const base = process.platform === "linux" ? viaFd(handle.fd) : target.abs;
		// Names as bytes: one that is not UTF-8 is stat'ed by its own bytes and shown with U+FFFD,
		// as "what changed" shows it (read as text, its stat failed and it was left out).
		const names: Buffer[] = [];
		// Node gives Buffer names for it at run time; its types allow only text encodings.
		for await (const dirent of await opendir(base, { encoding: "buffer" as BufferEncoding })) {
			names.push(dirent.name as unknown as Buffer);
			if (names.length > maxFolderEntries) break;
		}
		names.sort(Buffer.compare);
		const slice = names.slice(page.offset, page.offset + page.limit);
		const entries: Entry[] = [];
		for (const bytes of slice) {
			const stat = await lstat(Buffer.concat([Buffer.from(`${base}/`), bytes])).catch(() => undefined);
			if (!stat) continue; // gone since the folder was read
			const name = bytes.toString("utf8");
			entries.push({
				name,
				path: target.rel === "" ? name : `${target.rel}/${name}`,
				type: typeOf(stat),
				size: stat.size,
				modifiedAt: stat.mtime.toISOString(),
			});
		}
		const next = page.offset + page.limit;
		return {
			path: target.rel,
			entries,
			nextCursor: next < Math.min(names.length, maxFolderEntries) ? String(next) : null,
		};
	} finally {
		await handle.close().catch(() => {});
	}
}
