import type { Confinement } from "./confined.ts";
import { spawnConfined } from "./confined.ts";

/**
 * rg's JSON output ignores --max-columns: a record holds the whole line, escaped (a 1 MiB file's
 * one line of text fits; one of control bytes, six bytes each, may not). A longer record is
 * skipped to its newline, never buffered whole nor parsed in pieces.
 */
const maxRecordBytes = 2 * 1024 * 1024;

/**
 * Cuts a byte stream into lines (without their newline) of at most `maxBytes`: a longer line is
 * dropped as it comes and the stream skipped to its next newline. Splitting bytes at "\n" never
 * cuts a UTF-8 character.
 */
export class LineSplitter {
	readonly #maxBytes: number;
	#parts: Buffer[] = [];
	#size = 0;
	#skipping = false;

	constructor(maxBytes: number) {
		this.#maxBytes = maxBytes;
	}

	/** The lines `chunk` completes. */
	push(chunk: Buffer): string[] {
		const lines: string[] = [];
		let start = 0;
		for (;;) {
			const newline = chunk.indexOf(10, start);
			const piece = chunk.subarray(start, newline === -1 ? chunk.length : newline);
			if (!this.#skipping && this.#size + piece.length > this.#maxBytes) {
				this.#skipping = true;
				this.#parts = [];
				this.#size = 0;
			} else if (!this.#skipping && piece.length > 0) {
				this.#parts.push(piece);
				this.#size += piece.length;
			}
			if (newline === -1) return lines;
			if (!this.#skipping) lines.push(Buffer.concat(this.#parts, this.#size).toString("utf8"));
			this.#parts = [];
			this.#size = 0;
			this.#skipping = false;
			start = newline + 1;
		}
	}

	/** The last line, when the stream ended without a newline after it. */
	end(): string | undefined {
		const last =
			this.#skipping || this.#size === 0 ? undefined : Buffer.concat(this.#parts, this.#size).toString("utf8");
		this.#parts = [];
		this.#size = 0;
		return last;
	}
}

/**
 * Runs `command` without a shell (confined as `confine` says), handing each stdout line to
 * `onLine` until it returns true or time runs out. Lines are bounded (LineSplitter) and whatever
 * `onLine` throws is taken as a line that matched nothing: nothing rg prints can throw here, in a
 * stream listener, where it would end the process.
 */
export function runLines(
	command: string,
	args: string[],
	cwd: string,
	deadline: number,
	onLine: (line: string) => boolean,
	confine: Confinement | undefined,
): Promise<{ cut: boolean }> {
	const take = (line: string) => {
		try {
			return onLine(line);
		} catch {
			return false;
		}
	};
	return new Promise((resolve, reject) => {
		// Listeners go on in the same tick as the spawn (spawnConfined is synchronous).
		const child = spawnConfined(confine, { command, args, folder: cwd, env: { PATH: process.env.PATH ?? "" } });
		const lines = new LineSplitter(maxRecordBytes);
		let cut = false;
		const stop = () => {
			cut = true;
			child.kill("SIGKILL");
		};
		const timer = setTimeout(stop, Math.max(0, deadline - Date.now()));
		child.stderr.resume();
		child.stdout.on("data", (chunk: Buffer) => {
			if (cut) return;
			for (const line of lines.push(chunk)) if (line && take(line)) return stop();
		});
		child.on("error", (error) => {
			clearTimeout(timer);
			reject(error);
		});
		child.on("close", () => {
			clearTimeout(timer);
			const last = lines.end();
			if (!cut && last && take(last)) cut = true;
			resolve({ cut });
		});
	});
}
