import type { Stats } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { extname } from "node:path";
import { GatewayError } from "../shared/errors.ts";
import { openInside, resolveWorkspacePath } from "./paths.ts";

/** A strong validator from what changes when a file is rewritten (inode, size, modification time in ns). */
export function etagOf(stat: Stats | { ino: number | bigint; size: number | bigint; mtimeMs: number }): string {
	const ns = BigInt(Math.round(Number(stat.mtimeMs) * 1e6));
	return `"${BigInt(stat.ino).toString(36)}-${BigInt(stat.size).toString(36)}-${ns.toString(36)}"`;
}

const types = new Map(
	Object.entries({
		".txt": "text/plain; charset=utf-8",
		".md": "text/markdown; charset=utf-8",
		".json": "application/json",
		".js": "text/javascript; charset=utf-8",
		".mjs": "text/javascript; charset=utf-8",
		".ts": "text/plain; charset=utf-8",
		".py": "text/x-python; charset=utf-8",
		".css": "text/css; charset=utf-8",
		".html": "text/html; charset=utf-8",
		".csv": "text/csv; charset=utf-8",
		".yaml": "application/yaml",
		".yml": "application/yaml",
		".xml": "application/xml",
		".svg": "image/svg+xml",
		".png": "image/png",
		".jpg": "image/jpeg",
		".jpeg": "image/jpeg",
		".gif": "image/gif",
		".webp": "image/webp",
		".pdf": "application/pdf",
		".zip": "application/zip",
		".gz": "application/gzip",
		".tar": "application/x-tar",
	}),
);

/** By the name's extension (a Map: the name is a user string); unknown ones are bytes. */
export const contentTypeOf = (name: string) => types.get(extname(name).toLowerCase()) ?? "application/octet-stream";

export type ByteRange = { start: number; end: number };

/**
 * One `bytes=` range (RFC 9110 §14.1.2) against a file of `size` bytes: undefined when the header
 * is absent or asks for several ranges (then the whole file is sent), "unsatisfiable" for 416.
 */
export function parseRange(header: string | undefined, size: number): ByteRange | "unsatisfiable" | undefined {
	if (!header) return undefined;
	const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
	if (!match) return header.includes(",") ? undefined : "unsatisfiable";
	const [, first, last] = match as unknown as [string, string, string];
	if (first === "" && last === "") return "unsatisfiable";
	if (first === "") {
		const suffix = Number(last);
		if (suffix === 0 || size === 0) return "unsatisfiable";
		return { start: Math.max(0, size - suffix), end: size - 1 };
	}
	const start = Number(first);
	const end = last === "" ? size - 1 : Math.min(Number(last), size - 1);
	if (start >= size || end < start) return "unsatisfiable";
	return { start, end };
}

/** An open file of the folder, checked: the caller streams from `handle` (and closes it). */
export async function openFile(cwd: string, path: string): Promise<{ handle: FileHandle; stat: Stats; rel: string }> {
	const target = await resolveWorkspacePath(cwd, path);
	const handle = await openInside(target, path);
	const stat = await handle.stat();
	if (!stat.isFile()) {
		await handle.close();
		throw new GatewayError(400, "not_a_file", `${JSON.stringify(path)} is not a file`);
	}
	return { handle, stat, rel: target.rel };
}
