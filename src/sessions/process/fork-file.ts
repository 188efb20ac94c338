import { randomUUID } from "node:crypto";
import { constants } from "node:fs";
import { open, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Config } from "../../config/config.ts";
import { GatewayError } from "../../shared/errors.ts";
import { isInside } from "../../shared/paths.ts";
import { newSessionFolder, piSessionDir } from "./session-files.ts";

/**
 * A fork's conversation (POST /v1/sessions/{id}/fork-session): the original's pi session file cut
 * at an entry, written as a new pi session in a folder of its own. pi's file is JSONL: a header
 * (`{"type":"session","version":3,"id","timestamp","cwd"}`) and entries that form a tree by
 * `id`/`parentId` (pi's docs/session-format.md). Without an entry the whole file is kept, every
 * branch, as pi's own `--fork` copies it; with one, the path from the root to that entry inclusive,
 * as pi's createBranchedSession cuts it. Either way the header is new: a new id, the fork's folder
 * as `cwd`, and no `parentSession` (the original's file is not the fork's to name or open).
 *
 * The file lies in the original's own folder, which its sandboxed pi (and so its agent) can write:
 * its bytes are read as untrusted. It is opened without following a link, read only up to
 * maxConversationBytes, parsed line by line with the event loop given turns, and a line that is not a
 * JSON object is left out (pi skips it too).
 */

/** Bytes of a pi session file a fork reads at most (413 `conversation_too_large` past it). */
export const maxConversationBytes = 128 * 1024 * 1024;
/** Characters of lines parsed between two turns of the event loop. */
const sliceChars = 4 * 1024 * 1024;

export interface ForkedConversation {
	/** The header's format version, kept (pi migrates an older file when it opens it). */
	version: number;
	/** The entries' lines, as written, in file order. */
	lines: string[];
}

interface Entry {
	line: string;
	id?: string;
	parentId?: string | null;
}

/**
 * The part of `file` a fork keeps, or undefined when there is nothing to keep yet (pi writes its
 * file once the conversation has an answer). 404 `entry_not_found` when `entryId` is not one of
 * its entries.
 */
export async function readForkedConversation(
	config: Config,
	file: string | undefined,
	entryId: string | undefined,
): Promise<ForkedConversation | undefined> {
	const text = file === undefined ? undefined : await readBounded(config, file);
	if (text === undefined) {
		if (entryId !== undefined) throw entryNotFound(entryId);
		return undefined;
	}
	const lines = text.split("\n");
	let header: Record<string, unknown> | undefined;
	const entries: Entry[] = [];
	let parsed = 0;
	for (const raw of lines) {
		const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
		if (line.trim() === "") continue;
		parsed += line.length;
		if (parsed > sliceChars) {
			parsed = 0;
			await new Promise<void>((resolve) => setImmediate(resolve));
		}
		const value = parseObject(line);
		if (value === undefined) continue;
		if (header === undefined && value.type === "session") header = value;
		else if (value.type !== "session") entries.push(entryOf(line, value));
	}
	if (header === undefined)
		throw new GatewayError(
			409,
			"conversation_unreadable",
			"The session's pi session file has no header; its conversation cannot be forked",
		);
	const version = typeof header.version === "number" && Number.isInteger(header.version) ? header.version : 3;
	if (entryId === undefined) return { version, lines: entries.map((e) => e.line) };
	return { version, lines: pathTo(entries, entryId).map((e) => e.line) };
}

/** The entries from the root to `entryId`, in that order (a loop in the parents is refused). */
function pathTo(entries: Entry[], entryId: string): Entry[] {
	const byId = new Map<string, Entry>();
	for (const entry of entries) if (entry.id !== undefined && !byId.has(entry.id)) byId.set(entry.id, entry);
	const path: Entry[] = [];
	const seen = new Set<string>();
	for (let at = byId.get(entryId); at !== undefined; at = at.parentId ? byId.get(at.parentId) : undefined) {
		if (seen.has(at.id as string))
			throw new GatewayError(409, "conversation_unreadable", "The session's pi session file's entries form a loop");
		seen.add(at.id as string);
		path.push(at);
	}
	if (path.length === 0) throw entryNotFound(entryId);
	return path.reverse();
}

/**
 * Writes the fork's file into a new folder of pi session files (session-files.ts): the header
 * naming `cwd`, then the kept entries. Returns its path, for pi's --session.
 */
export async function writeForkedConversation(
	config: Config,
	conversation: ForkedConversation,
	cwd: string,
): Promise<string> {
	const id = randomUUID();
	const timestamp = new Date().toISOString();
	const header = { type: "session", version: conversation.version, id, timestamp, cwd };
	const file = join(newSessionFolder(config), `${timestamp.replace(/[:.]/g, "-")}_${id}.jsonl`);
	const body = [JSON.stringify(header), ...conversation.lines].join("\n");
	await writeFile(file, `${body}\n`, { flag: "wx", mode: 0o600 });
	return file;
}

/** The file's text; undefined when it does not exist (yet). */
async function readBounded(config: Config, file: string): Promise<string | undefined> {
	if (!isInside(piSessionDir(config), file))
		throw new GatewayError(409, "conversation_unreadable", "The session's pi session file is not the gateway's");
	let handle: import("node:fs/promises").FileHandle;
	try {
		handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
	} catch (error) {
		if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
		throw new GatewayError(
			409,
			"conversation_unreadable",
			`The session's pi session file cannot be opened (${(error as NodeJS.ErrnoException).code}): is it a link?`,
		);
	}
	try {
		const stat = await handle.stat();
		if (!stat.isFile())
			throw new GatewayError(409, "conversation_unreadable", "The session's pi session file is not a file");
		if (stat.size > maxConversationBytes)
			throw new GatewayError(
				413,
				"conversation_too_large",
				`The session's conversation is ${stat.size} bytes; a fork reads at most ${maxConversationBytes}`,
			);
		const buffer = Buffer.alloc(stat.size);
		let filled = 0;
		for (let got = 1; got > 0 && filled < buffer.length; filled += got)
			({ bytesRead: got } = await handle.read(buffer, filled, buffer.length - filled, filled));
		return buffer.subarray(0, filled).toString("utf8");
	} finally {
		await handle.close();
	}
}

function parseObject(line: string): Record<string, unknown> | undefined {
	try {
		const value = JSON.parse(line) as unknown;
		return value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
	} catch {
		return undefined;
	}
}

function entryOf(line: string, value: Record<string, unknown>): Entry {
	const id = typeof value.id === "string" ? value.id : undefined;
	const parentId = typeof value.parentId === "string" ? value.parentId : null;
	return { line, id, parentId };
}

const entryNotFound = (entryId: string) =>
	new GatewayError(
		404,
		"entry_not_found",
		`The session's conversation has no entry ${entryId} (GET …/entries and …/fork-messages list them)`,
	);
