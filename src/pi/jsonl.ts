export interface JsonlHandlers {
	/** One record as the bytes pi printed (a view of the pipe's chunk while it fits in one: do not mutate). */
	onLine(line: Buffer): void;
	/**
	 * A line grew past the cap; its characters up to the next LF are dropped. `head` is its
	 * beginning, enough to tell whose answer it was.
	 */
	onOverflow(droppedChars: number, head: string): void;
}

const LF = 0x0a;
const CR = 0x0d;
const headChars = 256;
/** Enough bytes for headChars UTF-16 code units whatever the characters (at most 3 bytes per unit). */
const headBytes = headChars * 3;

/**
 * Strict JSONL framing as pi speaks it: records end at LF only, one trailing CR is stripped.
 * Not `readline`, which also splits on U+2028/U+2029 (legal inside JSON strings).
 *
 * Lines stay bytes: the gateway forwards most records without reading them, so decoding each
 * to a string (and encoding it again for the socket) would be a copy per event for nothing.
 * LF (0x0A) never occurs inside a multi-byte UTF-8 sequence, so splitting bytes on it cannot cut
 * a character; a character split across two chunks is simply joined with its line. A line that
 * fits in one chunk is a view of it (no copy); a line split across chunks is joined once, at
 * its LF.
 *
 * The cap counts UTF-16 code units, as the string decoder before did ("characters"): a line's
 * byte length is never below that, so only a line over the cap in bytes is counted.
 */
export class JsonlDecoder {
	readonly #maxLineChars: number;
	readonly #handlers: JsonlHandlers;
	/** The pieces of a line not ended yet (from earlier chunks). */
	#parts: Buffer[] = [];
	#partBytes = 0;
	/** UTF-16 length of #parts, counted only once they pass the cap in bytes (-1: not counted). */
	#partChars = -1;
	#discarding = false;
	#dropped = 0;
	#head = "";

	constructor(maxLineChars: number, handlers: JsonlHandlers) {
		this.#maxLineChars = maxLineChars;
		this.#handlers = handlers;
	}

	push(chunk: Buffer | string): void {
		const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
		let start = 0;
		for (let lf = bytes.indexOf(LF); lf !== -1; lf = bytes.indexOf(LF, start)) {
			if (this.#discarding) {
				this.#dropped += utf16Length(bytes, start, lf);
				this.#finishDiscard();
			} else if (this.#parts.length === 0) {
				this.#line(bytes.subarray(start, lf));
			} else {
				this.#parts.push(bytes.subarray(start, lf));
				const line = Buffer.concat(this.#parts, this.#partBytes + lf - start);
				this.#resetParts();
				this.#line(line);
			}
			start = lf + 1;
		}
		if (start < bytes.length) this.#keep(bytes.subarray(start));
	}

	/** End of stream: a last line without LF still counts. */
	end(): void {
		if (this.#discarding) this.#finishDiscard();
		else if (this.#parts.length > 0) {
			const line = Buffer.concat(this.#parts, this.#partBytes);
			this.#resetParts();
			this.#line(line);
		}
	}

	/** A piece of a line whose LF has not come yet. */
	#keep(piece: Buffer): void {
		if (this.#discarding) {
			this.#dropped += utf16Length(piece, 0, piece.length);
			return;
		}
		this.#parts.push(piece);
		this.#partBytes += piece.length;
		if (this.#partBytes <= this.#maxLineChars) return;
		if (this.#partChars === -1) this.#partChars = this.#parts.reduce((n, p) => n + utf16Length(p, 0, p.length), 0);
		else this.#partChars += utf16Length(piece, 0, piece.length);
		if (this.#partChars <= this.#maxLineChars) return;
		// From here on the line is counted, not kept: memory stays near the cap whatever pi prints.
		this.#discarding = true;
		this.#dropped = this.#partChars;
		this.#head = headOf(Buffer.concat(this.#parts, Math.min(this.#partBytes, headBytes)));
		this.#resetParts();
	}

	#line(line: Buffer): void {
		if (line.length > this.#maxLineChars) {
			const chars = utf16Length(line, 0, line.length);
			if (chars > this.#maxLineChars) {
				this.#handlers.onOverflow(chars, headOf(line.subarray(0, headBytes)));
				return;
			}
		}
		this.#handlers.onLine(line.length > 0 && line[line.length - 1] === CR ? line.subarray(0, -1) : line);
	}

	#resetParts(): void {
		this.#parts = [];
		this.#partBytes = 0;
		this.#partChars = -1;
	}

	#finishDiscard(): void {
		this.#handlers.onOverflow(this.#dropped, this.#head);
		this.#discarding = false;
		this.#dropped = 0;
		this.#head = "";
	}
}

/** The first headChars UTF-16 code units of a line's beginning (a character cut at the end of `bytes` is dropped). */
function headOf(bytes: Buffer): string {
	return bytes.toString("utf8").slice(0, headChars);
}

/**
 * How many UTF-16 code units `bytes[start, end)` decodes to, counted without decoding: one per
 * byte that starts a character, one more for each 4-byte character (a surrogate pair). Independent
 * of where chunks were cut. Only over-cap lines pay for it.
 */
function utf16Length(bytes: Buffer, start: number, end: number): number {
	let units = 0;
	for (let i = start; i < end; i++) {
		const b = bytes[i] as number;
		if ((b & 0xc0) !== 0x80) units += b >= 0xf0 ? 2 : 1;
	}
	return units;
}

/** One record on the wire: compact JSON + LF. JSON.stringify escapes nothing that would break framing. */
export function encodeLine(record: unknown): string {
	return `${JSON.stringify(record)}\n`;
}
