import { constants } from "node:fs";
import { lstat, open, readlink } from "node:fs/promises";
import { Readable } from "node:stream";
import { createGzip } from "node:zlib";
import { GatewayError } from "../shared/errors.ts";
import { fdPath, folderOf, isInside, openFolderInside } from "./paths.ts";
import { headerOf, padding, type TarEntry, trailer } from "./tar.ts";

/** Entries one archive holds at most (their names are listed before streaming starts). */
export const maxArchiveEntries = 200_000;

/**
 * Every file, folder and symlink under `root` (symlinks as links: never followed), depth first,
 * names sorted. 413 past `maxBytes` of file content or `maxArchiveEntries` entries, found before a
 * byte is sent, so a refusal is a clean problem+json and never half an archive.
 */
export async function listArchive(cwd: string, maxBytes: number): Promise<{ root: string; entries: TarEntry[] }> {
	const root = await folderOf(cwd);
	const entries: TarEntry[] = [];
	let bytes = 0;
	const tooLarge = (what: string) =>
		new GatewayError(
			413,
			"archive_too_large",
			`The folder is larger than the archive limit (${what}; --workspace-max-archive-bytes)`,
		);
	const walk = async (rel: string) => {
		const dir = await openFolderInside(root, rel);
		if (!dir) return;
		const names: string[] = [];
		for await (const entry of dir) names.push(entry.name);
		names.sort();
		for (const name of names) {
			const path = rel ? `${rel}/${name}` : name;
			const stat = await lstat(`${root}/${path}`).catch(() => undefined);
			if (!stat) continue;
			if (entries.length >= maxArchiveEntries) throw tooLarge(`more than ${maxArchiveEntries} entries`);
			const base = { path, size: 0, mode: stat.mode, mtime: stat.mtimeMs / 1000 };
			if (stat.isSymbolicLink())
				entries.push({ ...base, type: "symlink", linkTarget: await readlink(`${root}/${path}`) });
			else if (stat.isDirectory()) {
				entries.push({ ...base, type: "dir" });
				await walk(path);
			} else if (stat.isFile()) {
				bytes += stat.size;
				if (bytes > maxBytes) throw tooLarge(`more than ${maxBytes} bytes`);
				entries.push({ ...base, type: "file", size: stat.size });
			}
		}
	};
	await walk("");
	return { root, entries };
}

/**
 * The entries as a gzip'd tar stream, one file at a time and one chunk at a time (backpressure
 * from the client reaches the disk reads). A file that changed size since it was listed is cut or
 * zero-filled to the size its header says; one that became a symlink or left the folder is sent empty.
 */
export function archiveStream(root: string, entries: TarEntry[]): Readable {
	return Readable.from(tarChunks(root, entries)).pipe(createGzip());
}

async function* tarChunks(root: string, entries: TarEntry[]): AsyncGenerator<Buffer> {
	for (const entry of entries) {
		yield headerOf(entry);
		if (entry.type !== "file") continue;
		let sent = 0;
		const handle = await open(
			`${root}/${entry.path}`,
			constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
		).catch(() => undefined);
		try {
			const real = handle && (await fdPath(handle));
			if (handle && (await handle.stat()).isFile() && (real === undefined || isInside(root, real))) {
				for await (const chunk of handle.createReadStream({
					start: 0,
					end: Math.max(0, entry.size - 1),
					autoClose: false,
				})) {
					const bytes = (chunk as Buffer).subarray(0, entry.size - sent);
					sent += bytes.length;
					if (bytes.length > 0) yield bytes;
					if (sent >= entry.size) break;
				}
			}
		} finally {
			await handle?.close();
		}
		// Zeros for what the file lost since it was listed, a chunk at a time.
		for (let left = entry.size - sent; left > 0; left -= 65536) yield Buffer.alloc(Math.min(left, 65536));
		yield padding(entry.size);
	}
	yield trailer();
}
