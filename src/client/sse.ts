/**
 * A Server-Sent Events parser that follows the HTML spec's event-stream rules: lines end in LF,
 * CR or CRLF (a CR at the end of one chunk and an LF at the start of the next are one line end),
 * a leading BOM is dropped, `:` lines are comments, `data:` lines join with LF, `retry:` takes
 * digits only, an `id:` holding NUL is ignored, and a block without data dispatches nothing.
 * It reports whether each frame carried its own `id:` line, because the gateway leaves ids off
 * frames that are not events of the log (`stream_open`, `dropped`, `error`).
 */

export interface SseFrame {
	/** The frame's own `id:` value, when it had one. */
	id: string | undefined;
	/** The last event id after this frame (the spec's id buffer, which persists across frames). */
	lastEventId: string;
	/** `event:`, or "message" when the frame named none. */
	event: string;
	data: string;
}

export interface SseParserOptions {
	/** Called with the reconnection time (ms) each time the stream sends `retry:`. */
	onRetry?: (ms: number) => void;
	/** The id buffer's starting value (the position a reconnect resumed from). */
	lastEventId?: string;
	/**
	 * The most characters one frame may hold before its blank line (its unfinished line and its
	 * data so far); past it `feed` throws FrameTooLarge. Unbounded when not given.
	 */
	maxFrameChars?: number;
}

/** A frame passed `maxFrameChars` without its end: the stream it came on should be given up, not retried. */
export class FrameTooLarge extends Error {
	constructor(max: number) {
		super(`An event stream frame passed ${max / (1024 * 1024)} MiB without its end: the stream was given up`);
		this.name = "FrameTooLarge";
	}
}

/** Frames of one event stream body. Leaving the loop early cancels the body (closing the connection). */
export async function* parseSse(
	body: ReadableStream<Uint8Array>,
	options: SseParserOptions = {},
): AsyncGenerator<SseFrame> {
	const reader = body.getReader();
	const decoder = new TextDecoder("utf-8", { ignoreBOM: false });
	const parser = new LineParser(options);
	try {
		for (;;) {
			const { done, value } = await reader.read();
			const text = done ? decoder.decode() : decoder.decode(value, { stream: true });
			yield* parser.feed(text, done);
			if (done) return;
		}
	} finally {
		// On an early exit (break, abort, error) this closes the connection; after the end it is a no-op.
		await reader.cancel().catch(() => {});
		reader.releaseLock();
	}
}

/**
 * The line and field state machine, fed decoded text; kept apart from I/O so it is easy to test.
 * Each character is looked at once: an unfinished line is kept as its pieces and joined when its
 * end arrives, so a long line costs its length, not its length times its chunks.
 */
export class LineParser {
	#partial: string[] = [];
	#partialChars = 0;
	#skipLf = false;
	#data: string[] = [];
	#dataChars = 0;
	#event = "";
	#id: string | undefined;
	#lastEventId: string;
	#started = false;
	readonly #onRetry: ((ms: number) => void) | undefined;
	readonly #max: number | undefined;

	constructor(options: SseParserOptions = {}) {
		this.#onRetry = options.onRetry;
		this.#lastEventId = options.lastEventId ?? "";
		this.#max = options.maxFrameChars;
	}

	/** The frames completed by `text`; `end` says the stream is over (an unfinished frame is dropped, as the spec says). */
	*feed(text: string, end = false): Generator<SseFrame> {
		// A BOM opens the stream at most once (parseSse's decoder already drops it; direct feeds may not).
		if (!this.#started && text.length > 0) {
			this.#started = true;
			if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
		}
		let start = 0;
		for (let i = 0; i < text.length; i++) {
			const ch = text.charCodeAt(i);
			if (ch === 10 && this.#skipLf && i === 0) {
				// The LF of a CRLF whose CR ended the previous chunk's last line.
				this.#skipLf = false;
				start = 1;
				continue;
			}
			this.#skipLf = false;
			if (ch !== 10 && ch !== 13) continue;
			const piece = text.slice(start, i);
			let line = piece;
			if (this.#partial.length > 0) {
				this.#partial.push(piece);
				line = this.#partial.join("");
				this.#partial = [];
				this.#partialChars = 0;
			}
			const frame = this.#line(line);
			if (frame) yield frame;
			if (ch === 13) {
				if (i + 1 < text.length && text.charCodeAt(i + 1) === 10) i++;
				else if (i + 1 === text.length) this.#skipLf = true;
			}
			start = i + 1;
		}
		if (start < text.length) {
			this.#partial.push(start === 0 ? text : text.slice(start));
			this.#partialChars += text.length - start;
		}
		if (end) {
			this.#partial = [];
			this.#partialChars = 0;
		}
		if (this.#max !== undefined && this.#partialChars + this.#dataChars > this.#max) throw new FrameTooLarge(this.#max);
	}

	#line(line: string): SseFrame | undefined {
		if (line === "") return this.#dispatch();
		if (line.startsWith(":")) return undefined;
		const colon = line.indexOf(":");
		const field = colon === -1 ? line : line.slice(0, colon);
		let value = colon === -1 ? "" : line.slice(colon + 1);
		if (value.startsWith(" ")) value = value.slice(1);
		if (field === "data") {
			this.#data.push(value);
			this.#dataChars += value.length + 1;
		} else if (field === "event") this.#event = value;
		else if (field === "id") {
			if (!value.includes("\0")) {
				this.#id = value;
				this.#lastEventId = value;
			}
		} else if (field === "retry") {
			if (/^\d+$/.test(value)) this.#onRetry?.(Number(value));
		}
		return undefined;
	}

	#dispatch(): SseFrame | undefined {
		const id = this.#id;
		const event = this.#event || "message";
		const data = this.#data;
		this.#id = undefined;
		this.#event = "";
		this.#data = [];
		this.#dataChars = 0;
		if (data.length === 0) return undefined;
		return { id, lastEventId: this.#lastEventId, event, data: data.join("\n") };
	}
}
