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

/** The line and field state machine, fed decoded text; kept apart from I/O so it is easy to test. */
export class LineParser {
	#buffer = "";
	#skipLf = false;
	#data: string[] = [];
	#event = "";
	#id: string | undefined;
	#lastEventId: string;
	#started = false;
	readonly #onRetry: ((ms: number) => void) | undefined;

	constructor(options: SseParserOptions = {}) {
		this.#onRetry = options.onRetry;
		this.#lastEventId = options.lastEventId ?? "";
	}

	/** The frames completed by `text`; `end` says the stream is over (an unfinished frame is dropped, as the spec says). */
	*feed(text: string, end = false): Generator<SseFrame> {
		let start = 0;
		let all = this.#buffer + text;
		// A BOM opens the stream at most once (parseSse's decoder already drops it; direct feeds may not).
		if (!this.#started && all.length > 0) {
			this.#started = true;
			if (all.charCodeAt(0) === 0xfeff) all = all.slice(1);
		}
		this.#buffer = "";
		for (let i = 0; i < all.length; i++) {
			const ch = all.charCodeAt(i);
			if (ch === 10 && this.#skipLf && i === start) {
				// The LF of a CRLF whose CR ended the previous line.
				this.#skipLf = false;
				start = i + 1;
				continue;
			}
			this.#skipLf = false;
			if (ch !== 10 && ch !== 13) continue;
			const frame = this.#line(all.slice(start, i));
			if (frame) yield frame;
			if (ch === 13) {
				if (i + 1 < all.length && all.charCodeAt(i + 1) === 10) i++;
				else if (i + 1 === all.length) this.#skipLf = true;
			}
			start = i + 1;
		}
		this.#buffer = all.slice(start);
		if (end) this.#buffer = "";
	}

	#line(line: string): SseFrame | undefined {
		if (line === "") return this.#dispatch();
		if (line.startsWith(":")) return undefined;
		const colon = line.indexOf(":");
		const field = colon === -1 ? line : line.slice(0, colon);
		let value = colon === -1 ? "" : line.slice(colon + 1);
		if (value.startsWith(" ")) value = value.slice(1);
		if (field === "data") this.#data.push(value);
		else if (field === "event") this.#event = value;
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
		if (data.length === 0) return undefined;
		return { id, lastEventId: this.#lastEventId, event, data: data.join("\n") };
	}
}
