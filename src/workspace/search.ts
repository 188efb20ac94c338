import { accessSync, constants } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { GatewayError } from "../shared/errors.ts";
import type { Confinement } from "./confined.ts";
import { globMatcher } from "./glob.ts";
import { fdPath, folderOf, isInside, openFolderInside } from "./paths.ts";
import { runLines } from "./tool-lines.ts";

export interface SearchMatch {
	path: string;
	/** 1-based; null for a match of the file's name. */
	line: number | null;
	text: string | null;
	/** The line holds a NUL byte (a binary file around the match); each NUL is shown as U+FFFD. */
	binary?: true;
}

export interface SearchResult {
	matches: SearchMatch[];
	/** The result cap or the time cap was reached: there may be more. */
	truncated: boolean;
	engine: "ripgrep" | "node";
}

export interface SearchOptions {
	q: string;
	glob?: string;
	maxResults: number;
	timeoutMs: number;
	/** "off": the pure-Node search even when rg is on PATH. */
	ripgrep: "auto" | "off";
	/** How rg runs (confined.ts); directly when absent. */
	confine?: Confinement;
}

/** Files larger than this are not searched (either engine); lines are cut to `maxLineChars`. */
const maxFileBytes = 1024 * 1024;
const maxLineChars = 300;
/** The fallback reads at most this many files per search. */
const maxFallbackFiles = 20_000;

let rgPath: string | null | undefined;
/** ripgrep on PATH, looked up once. */
export function findRipgrep(): string | undefined {
	if (rgPath === undefined) {
		rgPath = null;
		for (const dir of (process.env.PATH ?? "").split(delimiter).filter(Boolean)) {
			try {
				accessSync(join(dir, "rg"), constants.X_OK);
				rgPath = join(dir, "rg");
				break;
			} catch {}
		}
	}
	return rgPath ?? undefined;
}

/**
 * File names that contain `q`, then lines that contain it (fixed strings, smart case: case-blind
 * unless `q` has a capital), both capped in number and time. ripgrep when it is on PATH (it
 * honours .gitignore and skips hidden files; confined as `options.confine` says); else a bounded
 * walk in Node that skips hidden files and node_modules. Symlinks are not followed by either.
 * Files with NUL bytes are searched as text: a line holding one is flagged `binary`.
 */
export async function searchWorkspace(cwd: string, options: SearchOptions): Promise<SearchResult> {
	let matchGlob: ((path: string) => boolean) | undefined;
	try {
		matchGlob = options.glob ? globMatcher(options.glob) : undefined;
	} catch {
		throw new GatewayError(400, "invalid_input", `glob: not a valid pattern: ${options.glob}`);
	}
	const root = await folderOf(cwd);
	const rg = options.ripgrep === "auto" ? findRipgrep() : undefined;
	const deadline = Date.now() + options.timeoutMs;
	const found = rg ? await viaRipgrep(rg, root, options, deadline) : await viaNode(root, options, matchGlob, deadline);
	return { ...found, engine: rg ? "ripgrep" : "node" };
}

const caseBlind = (q: string) => q === q.toLowerCase();
const contains = (q: string) => {
	const blind = caseBlind(q);
	const needle = blind ? q.toLowerCase() : q;
	return (text: string) => (blind ? text.toLowerCase() : text).includes(needle);
};
const cut = (line: string) => (line.length > maxLineChars ? line.slice(0, maxLineChars) : line).replace(/\r?\n$/, "");

/** A matched line as answered: cut, NULs shown as U+FFFD and the match flagged binary. */
function lineMatch(path: string, line: number, text: string): SearchMatch {
	const shown = cut(text);
	if (!text.includes("\0")) return { path, line, text: shown };
	return { path, line, text: shown.replaceAll("\0", "\uFFFD"), binary: true };
}

/**
 * rg reads no configuration from the folder: not its own config file, nor any ignore file
 * (.gitignore, .ignore, .rgignore, .git/info/exclude — an agent wrote them: an attacker's review hid
 * files from a person's search with a planted .ignore), nor the gateway user's global excludes. It
 * skips what the built-in search skips instead: hidden files and node_modules.
 */
const noFolderConfig = ["--no-config", "--no-ignore", "--glob=!node_modules/"];

async function viaRipgrep(rg: string, root: string, options: SearchOptions, deadline: number) {
	const globs = options.glob ? [`--glob=${options.glob}`] : [];
	const matches: SearchMatch[] = [];
	const nameHit = contains(options.q);
	let truncated = false;
	const run = (args: string[], onLine: (line: string) => boolean) =>
		runLines(rg, args, root, deadline, onLine, options.confine);
	// Every user string is the value of an `=` option or follows `-e`/`--`: none can be read as an option.
	const names = await run(
		["--files", ...noFolderConfig, `--max-filesize=${maxFileBytes}`, ...globs, "--", "."],
		(line) => {
			const path = line.replace(/^\.\//, "");
			if (nameHit(path.slice(path.lastIndexOf("/") + 1))) matches.push({ path, line: null, text: null });
			return matches.length >= options.maxResults;
		},
	);
	truncated ||= names.cut;
	if (matches.length < options.maxResults && !names.cut) {
		// --text: a NUL byte does not end the file's search (rg's default) or renumber its lines (--binary).
		const args = [
			"--json",
			...noFolderConfig,
			"--text",
			"--fixed-strings",
			"--smart-case",
			`--max-filesize=${maxFileBytes}`,
		];
		const lines = await run([...args, ...globs, "-e", options.q, "--", "."], (line) => {
			const match = ripgrepMatch(line);
			if (match) matches.push(match);
			return matches.length >= options.maxResults;
		});
		truncated ||= lines.cut;
	}
	return { matches: matches.slice(0, options.maxResults), truncated };
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
	value !== null && typeof value === "object" && !Array.isArray(value);

/** One line of rg's JSON as a match, when it is one of the shape rg writes; anything else is undefined. */
export function ripgrepMatch(line: string): SearchMatch | undefined {
	let record: unknown;
	try {
		record = JSON.parse(line);
	} catch {
		return undefined;
	}
	if (!isRecord(record) || record.type !== "match" || !isRecord(record.data)) return undefined;
	const { path, lines, line_number: number } = record.data;
	if (typeof number !== "number" || !Number.isSafeInteger(number) || number < 1) return undefined;
	const text = textOf(lines);
	const name = textOf(path);
	if (text === undefined || name === undefined) return undefined;
	return lineMatch(name.replace(/^\.\//, ""), number, text);
}

/**
 * rg's `{text}`, or `{bytes}` (base64) for what is not UTF-8 — a line, or a file's name, shown
 * with U+FFFD as "what changed" shows it (a re-test's file with such a name was found by name but
 * never by its text).
 */
function textOf(field: unknown): string | undefined {
	if (!isRecord(field)) return undefined;
	if (typeof field.text === "string") return field.text;
	if (typeof field.bytes === "string") return Buffer.from(field.bytes, "base64").toString("utf8");
	return undefined;
}

async function viaNode(
	root: string,
	options: SearchOptions,
	matchGlob: ((path: string) => boolean) | undefined,
	deadline: number,
) {
	const matches: SearchMatch[] = [];
	const hit = contains(options.q);
	const contents: string[] = [];
	let truncated = false;
	const full = () => matches.length >= options.maxResults;
	// Names first (as with rg), breadth-first, descriptors never followed through symlinks.
	const queue = [""];
	while (queue.length > 0 && !full()) {
		if (Date.now() > deadline || contents.length >= maxFallbackFiles) {
			truncated = true;
			break;
		}
		const rel = queue.shift() as string;
		const dir = await openFolderInside(root, rel);
		if (!dir) continue;
		for await (const entry of dir) {
			if (entry.name.startsWith(".") || entry.name === "node_modules") continue;
			const path = rel ? `${rel}/${entry.name}` : entry.name;
			if (entry.isDirectory()) queue.push(path);
			else if (entry.isFile() && (!matchGlob || matchGlob(path))) {
				if (hit(entry.name) && !full()) matches.push({ path, line: null, text: null });
				contents.push(path);
			}
		}
	}
	for (const path of contents) {
		if (full() || Date.now() > deadline) {
			truncated ||= Date.now() > deadline;
			break;
		}
		const text = await readSmallFile(root, path);
		if (text === undefined) continue;
		const lines = text.split("\n");
		for (let i = 0; i < lines.length && !full(); i++)
			if (hit(lines[i] as string)) matches.push(lineMatch(path, i + 1, lines[i] as string));
	}
	if (full()) truncated = true;
	return { matches: matches.slice(0, options.maxResults), truncated };
}

/** The file as text (NUL bytes and all) when it is small and regular (not through a symlink); else undefined. */
async function readSmallFile(root: string, path: string): Promise<string | undefined> {
	let handle: FileHandle | undefined;
	try {
		handle = await open(`${root}/${path}`, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
		// The agent may swap a folder on the way for a symlink while the walk runs.
		if (!isInside(root, (await fdPath(handle)) ?? root)) return undefined;
		const stat = await handle.stat();
		if (!stat.isFile() || stat.size > maxFileBytes) return undefined;
		const bytes = await handle.readFile();
		return bytes.toString("utf8");
	} catch {
		return undefined;
	} finally {
		await handle?.close();
	}
}
