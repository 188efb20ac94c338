import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { type FileHandle, lstat, mkdir, open, realpath, rename, unlink } from "node:fs/promises";
import type { Readable } from "node:stream";
import { GatewayError } from "../shared/errors.ts";
import { assertOpenedInside, folderOf, isInside, normalizeWorkspacePath, notFound, outside, viaFd } from "./paths.ts";
import { etagOf } from "./reading.ts";

/** The folder a file goes in, open and checked, and the file's name in it. */
interface Parent {
	dir: FileHandle;
	/** The folder by path (through its descriptor on Linux). */
	at: string;
	name: string;
	root: string;
}

const dirFlags = constants.O_RDONLY | constants.O_DIRECTORY;

/**
 * Walks to the folder of `path` one component at a time, each opened and checked against the
 * folder's real path before the next is looked up through it, so no component can be swapped for
 * a symlink out between a check and its use. `create`: missing folders are made on the way.
 */
export async function openParent(cwd: string, path: string, create: boolean): Promise<Parent> {
	const rel = normalizeWorkspacePath(path);
	if (rel === "") throw outside(path, "the folder itself is not a file");
	const root = await folderOf(cwd);
	const parts = rel.split("/");
	const name = parts.pop() as string;
	let dir = await open(root, dirFlags);
	try {
		for (const part of parts) {
			const next = `${at(dir, root)}/${part}`;
			const stat = await lstat(next).catch(() => undefined);
			if (!stat) {
				if (!create) throw notFound(path);
				await mkdir(next).catch((error) => {
					if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
				});
			} else if (stat.isSymbolicLink()) {
				const real = await realpath(next).catch(() => undefined);
				if (!real || !isInside(root, real)) throw outside(path, "a symlink on the way leads out of it");
			} else if (!stat.isDirectory()) throw new GatewayError(409, "not_a_folder", `${part} in ${path} is a file`);
			const opened = await open(next, dirFlags);
			await dir.close();
			dir = opened;
			await assertOpenedInside(dir, root, path);
		}
		return { dir, at: at(dir, root, rel, parts.length), name, root };
	} catch (error) {
		await dir.close().catch(() => {});
		throw error;
	}
}

/** Linux: the descriptor's path, never re-resolved; elsewhere the checked path itself. */
function at(dir: FileHandle, root: string, rel?: string, depth?: number): string {
	if (process.platform === "linux") return viaFd(dir.fd);
	return rel === undefined ? root : [root, ...rel.split("/").slice(0, depth)].join("/");
}

export interface WriteOptions {
	ifMatch?: string;
	ifNoneMatch?: string;
	maxBytes: number;
}

/**
 * Streams `body` into a new file beside the target, then renames it into place (readers never see
 * half a file). 412 when `If-Match`/`If-None-Match` does not hold, 413 past `maxBytes` (the partial
 * file is removed). A last component that is a symlink is written through only when it points inside.
 */
export async function writeFile(
	cwd: string,
	path: string,
	body: Readable,
	options: WriteOptions,
	hops = 0,
): Promise<{ created: boolean; etag: string }> {
	const parent = await openParent(cwd, path, true);
	const target = `${parent.at}/${parent.name}`;
	let temp: string | undefined;
	try {
		const before = await lstat(target).catch(() => undefined);
		if (before?.isSymbolicLink()) {
			const real = await realpath(target).catch(() => undefined);
			if (!real || !isInside(parent.root, real) || hops > 0) throw outside(path, "a symlink leads out of it");
			return await writeFile(cwd, real.slice(parent.root.length + 1), body, options, hops + 1);
		}
		if (before?.isDirectory()) throw new GatewayError(409, "not_a_file", `${JSON.stringify(path)} is a folder`);
		checkPreconditions(before, options);
		temp = `${parent.at}/.pi-gateway-upload-${randomBytes(6).toString("hex")}`;
		const out = await open(
			temp,
			constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
			before ? before.mode & 0o777 : 0o644,
		);
		try {
			await copyBounded(body, out, options.maxBytes);
		} finally {
			await out.close();
		}
		// Checked again right before the swap: a write that raced this one since is not overwritten blind.
		checkPreconditions(await lstat(target).catch(() => undefined), options);
		await rename(temp, target);
		temp = undefined;
		return { created: before === undefined, etag: etagOf(await lstat(target)) };
	} finally {
		if (temp) await unlink(temp).catch(() => {});
		await parent.dir.close().catch(() => {});
	}
}

function checkPreconditions(stat: { ino: number; size: number; mtimeMs: number } | undefined, options: WriteOptions) {
	const failed = (detail: string) => new GatewayError(412, "precondition_failed", detail);
	const current = stat ? etagOf(stat) : undefined;
	if (options.ifMatch !== undefined) {
		const tags = options.ifMatch.split(",").map((t) => t.trim());
		if (!current || (!tags.includes("*") && !tags.includes(current)))
			throw failed(current ? `The file's ETag is ${current}` : "The file does not exist (If-Match)");
	}
	if (options.ifNoneMatch !== undefined && current) {
		const tags = options.ifNoneMatch.split(",").map((t) => t.trim());
		if (tags.includes("*") || tags.includes(current)) throw failed("The file exists (If-None-Match)");
	}
}

async function copyBounded(body: Readable, out: FileHandle, maxBytes: number): Promise<void> {
	let written = 0;
	for await (const chunk of body) {
		const bytes = chunk as Buffer;
		written += bytes.byteLength;
		if (written > maxBytes) {
			body.destroy();
			throw new GatewayError(
				413,
				"body_too_large",
				`Uploads are limited to ${maxBytes} bytes (--workspace-max-upload-bytes)`,
			);
		}
		await out.write(bytes);
	}
}

/** Removes a file or a symlink (the link, never its target). Folders are refused (409). */
export async function deleteFile(cwd: string, path: string): Promise<void> {
	const parent = await openParent(cwd, path, false);
	try {
		const target = `${parent.at}/${parent.name}`;
		const stat = await lstat(target).catch(() => undefined);
		if (!stat) throw notFound(path);
		if (stat.isDirectory()) throw new GatewayError(409, "not_a_file", `${JSON.stringify(path)} is a folder`);
		await unlink(target);
	} finally {
		await parent.dir.close().catch(() => {});
	}
}
