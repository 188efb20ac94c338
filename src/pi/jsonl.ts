import { StringDecoder } from "node:string_decoder";

export interface JsonlHandlers {
	onLine(line: string): void;
	/**
	 * A line grew past the cap; its characters up to the next LF are dropped. `head` is its
	 * beginning, enough to tell whose answer it was.
	 */
	onOverflow(droppedChars: number, head: string): void;
}

/**
 * Strict JSONL framing as pi speaks it: records end at LF only, one trailing CR is stripped.
 * Not `readline`, which also splits on U+2028/U+2029 (legal inside JSON strings).
 * The decoder keeps a multi-byte character that straddles two chunks whole.
 */
const headChars = 256;

export class JsonlDecoder {
	readonly #decoder = new StringDecoder("utf8");
	readonly #maxLineChars: number;
	readonly #handlers: JsonlHandlers;
	#buffer = "";
	#discarding = false;
	#dropped = 0;
	#head = "";

	constructor(maxLineChars: number, handlers: JsonlHandlers) {
		this.#maxLineChars = maxLineChars;
		this.#handlers = handlers;
	}

	push(chunk: Buffer | string): void {
		this.#feed(typeof chunk === "string" ? chunk : this.#decoder.write(chunk));
	}

	/** End of stream: a last line without LF still counts. */
	end(): void {
		this.#feed(this.#decoder.end());
		if (this.#discarding) this.#finishDiscard();
		else if (this.#buffer.length > 0) this.#emit(this.#buffer);
		this.#buffer = "";
	}

	#feed(text: string): void {
		let start = 0;
		for (let lf = text.indexOf("\n"); lf !== -1; lf = text.indexOf("\n", start)) {
			if (this.#discarding) {
				this.#dropped += lf - start;
				this.#finishDiscard();
			} else {
				const line = this.#buffer.length > 0 ? this.#buffer + text.slice(start, lf) : text.slice(start, lf);
				this.#buffer = "";
				if (line.length > this.#maxLineChars) this.#handlers.onOverflow(line.length, line.slice(0, headChars));
				else this.#emit(line);
			}
			start = lf + 1;
		}
		if (start >= text.length) return;
		if (this.#discarding) {
			this.#dropped += text.length - start;
			return;
		}
		this.#buffer += text.slice(start);
		if (this.#buffer.length > this.#maxLineChars) {
			// From here on the line is counted, not kept: memory stays at the cap whatever pi prints.
			this.#discarding = true;
			this.#dropped = this.#buffer.length;
			this.#head = this.#buffer.slice(0, headChars);
			this.#buffer = "";
		}
	}

	#finishDiscard(): void {
		this.#handlers.onOverflow(this.#dropped, this.#head);
		this.#discarding = false;
		this.#dropped = 0;
		this.#head = "";
	}

	#emit(line: string): void {
		this.#handlers.onLine(line.endsWith("\r") ? line.slice(0, -1) : line);
	}
}

/** One record on the wire: compact JSON + LF. JSON.stringify escapes nothing that would break framing. */
export function encodeLine(record: unknown): string {
	return `${JSON.stringify(record)}\n`;
}
