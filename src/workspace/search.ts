import { spawn } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { StringDecoder } from "node:string_decoder";
import { GatewayError } from "../errors.ts";
import { globMatcher } from "./glob.ts";
import { fdPath, folderOf, isInside, openFolderInside } from "./paths.ts";

export interface SearchMatch {
	path: string;
	/** 1-based; null for a match of the file's name. */
	line: number | null;
	text: string | null;
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
 * honours .gitignore and skips hidden files); else a bounded walk in Node that skips hidden
 * files and node_modules. Symlinks are not followed by either.
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

async function viaRipgrep(rg: string, root: string, options: SearchOptions, deadline: number) {
	const globs = options.glob ? [`--glob=${options.glob}`] : [];
	const matches: SearchMatch[] = [];
	const nameHit = contains(options.q);
	let truncated = false;
	// Every user string is the value of an `=` option or follows `-e`/`--`: none can be read as an option.
	const names = await runLines(
		rg,
		["--files", "--no-config", `--max-filesize=${maxFileBytes}`, ...globs, "--", "."],
		root,
		deadline,
		(line) => {
			const path = line.replace(/^\.\//, "");
			if (nameHit(path.slice(path.lastIndexOf("/") + 1))) matches.push({ path, line: null, text: null });
			return matches.length >= options.maxResults;
		},
	);
	truncated ||= names.cut;
	if (matches.length < options.maxResults && !names.cut) {
		const args = ["--json", "--no-config", "--fixed-strings", "--smart-case", `--max-filesize=${maxFileBytes}`];
		const lines = await runLines(
			rg,
			[...args, `--max-columns=${maxLineChars}`, "--max-columns-preview", ...globs, "-e", options.q, "--", "."],
			root,
			deadline,
			(line) => {
				const record = JSON.parse(line) as { type: string; data?: RipgrepMatch };
				const data = record.data;
				if (record.type !== "match" || !data?.path.text || data.lines.text === undefined) return false;
				matches.push({ path: data.path.text.replace(/^\.\//, ""), line: data.line_number, text: cut(data.lines.text) });
				return matches.length >= options.maxResults;
			},
		);
		truncated ||= lines.cut;
	}
	return { matches: matches.slice(0, options.maxResults), truncated };
}

type RipgrepMatch = { path: { text?: string }; lines: { text?: string }; line_number: number };

/** Runs `command` without a shell, handing each stdout line to `onLine` until it returns true or time runs out. */
function runLines(
	command: string,
	args: string[],
	cwd: string,
	deadline: number,
	onLine: (line: string) => boolean,
): Promise<{ cut: boolean }> {
	return new Promise((resolve, reject) => {
		const child = spawn(command, args, {
			cwd,
			stdio: ["ignore", "pipe", "ignore"],
			env: { PATH: process.env.PATH ?? "" },
		});
		const decoder = new StringDecoder("utf8");
		let rest = "";
		let cut = false;
		const stop = () => {
			cut = true;
			child.kill("SIGKILL");
		};
		const timer = setTimeout(stop, Math.max(0, deadline - Date.now()));
		child.stdout.on("data", (chunk: Buffer) => {
			if (cut) return;
			const lines = (rest + decoder.write(chunk)).split("\n");
			rest = lines.pop() ?? "";
			// A line longer than this is no line of ours (rg caps columns): dropped, not buffered.
			if (rest.length > 64 * 1024) rest = "";
			for (const line of lines) if (line && onLine(line)) return stop();
		});
		child.on("error", (error) => {
			clearTimeout(timer);
			reject(error);
		});
		child.on("close", () => {
			clearTimeout(timer);
			if (!cut && rest && onLine(rest)) cut = true;
			resolve({ cut });
		});
	});
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
		const text = await readSmallText(root, path);
		if (text === undefined) continue;
		const lines = text.split("\n");
		for (let i = 0; i < lines.length && !full(); i++)
			if (hit(lines[i] as string)) matches.push({ path, line: i + 1, text: cut(lines[i] as string) });
	}
	if (full()) truncated = true;
	return { matches: matches.slice(0, options.maxResults), truncated };
}

/** The file as text when it is small, regular (not through a symlink) and has no NUL byte; else undefined. */
async function readSmallText(root: string, path: string): Promise<string | undefined> {
	let handle: FileHandle | undefined;
	try {
		handle = await open(`${root}/${path}`, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
		// The agent may swap a folder on the way for a symlink while the walk runs.
		if (!isInside(root, (await fdPath(handle)) ?? root)) return undefined;
		const stat = await handle.stat();
		if (!stat.isFile() || stat.size > maxFileBytes) return undefined;
		const bytes = await handle.readFile();
		return bytes.includes(0) ? undefined : bytes.toString("utf8");
	} catch {
		return undefined;
	} finally {
		await handle?.close();
	}
}
