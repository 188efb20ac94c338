import type { Context } from "hono";
import { streamSSE } from "hono/streaming";
import { isEventType } from "../pi/event-type.ts";
import type { LoggedEvent } from "../sessions/event-log.ts";

export interface SseOptions {
	heartbeatMs: number;
	/** Unsent text a live subscriber may hold before it is cut off. */
	maxBufferedBytes: number;
	/** How long a cut-off subscriber's socket gets to take its final frame before it is closed. */
	dropGraceMs: number;
}

/**
 * `id:`, `event:` and pi's line as `data:`, as wire bytes: pi's line goes in as the bytes pi
 * printed, never decoded. Every field is built so that it cannot hold CR or LF, the SSE line
 * breaks: the type must pass isEventType, an id is a number or `<session>:<seq>`, and a line
 * break in the data (pi's lines hold no LF, but a raw CR would break the frame) starts another
 * `data:` line, which SSE clients join with LF (equal JSON: a raw break is only legal between
 * tokens). U+2028 is no SSE line break (and its UTF-8 bytes hold no CR or LF).
 */
export function frame(event: LoggedEvent, id: string | number | undefined = event.seq): Buffer {
	const head = `${idLine(id)}event: ${checkedType(event.type)}\ndata: `;
	const data = event.data;
	if (data.indexOf(LF) !== -1 || data.indexOf(CR) !== -1) return Buffer.from(`${head}${splitData(data)}\n\n`);
	// One allocation and two copies: the header is ASCII, so its length in bytes is its length.
	const out = Buffer.allocUnsafe(head.length + data.length + 2);
	out.write(head, 0, "latin1");
	data.copy(out, head.length);
	out[out.length - 2] = LF;
	out[out.length - 1] = LF;
	return out;
}

/**
 * What an outbox queues: text, bytes, or a logged event whose frame is written straight into the
 * batch the outbox sends (pi's bytes copied once on their way to the socket, no string and no
 * object per event). Only an event whose data holds no CR or LF is queued as itself.
 */
export type Chunk = string | Uint8Array | LoggedEvent;

let lastEvent: LoggedEvent | undefined;
let lastFrame: Chunk | undefined;

/**
 * What live subscribers queue for `event`, decided once per event and shared by all of them.
 * They all take an event during its append, so remembering the last one is enough; nothing is
 * kept on the logged event (the log would hold each event twice; a replay builds its own frames).
 */
export function frameBytes(event: LoggedEvent): Chunk {
	if (event !== lastEvent || lastFrame === undefined) {
		const data = event.data;
		// typeLinesOf checks the type (and throws for one that could forge a frame) before it is queued.
		lastFrame = data.indexOf(LF) !== -1 || data.indexOf(CR) !== -1 || !typeLinesOf(event.type) ? frame(event) : event;
		lastEvent = event;
	}
	return lastFrame;
}

/** A gateway event's frame; without `id` it has no `id:` line (the client keeps its last id). */
export function gatewayFrame(type: string, fields: Record<string, unknown>, id?: string | number): string {
	return `${idLine(id)}event: ${checkedType(type)}\ndata: ${JSON.stringify({ type, ...fields })}\n\n`;
}

const LF = 0x0a;
const CR = 0x0d;
const lineBreak = /\r\n|\r|\n/;
const idPrefix = Buffer.from("id: ");

/** `\nevent: <type>\ndata: ` per type, checked once: pi has a few dozen types (kept up to a bound). */
const typeLines = new Map<string, Uint8Array>();

function typeLinesOf(type: string): Uint8Array {
	let bytes = typeLines.get(type);
	if (bytes === undefined) {
		bytes = Buffer.from(`\nevent: ${checkedType(type)}\ndata: `, "latin1");
		if (typeLines.size < 1024) typeLines.set(type, bytes);
	}
	return bytes;
}

/** The bytes frame(event) puts on the wire, for an event whose data holds no CR or LF. */
function lineFrameSize(event: LoggedEvent): number {
	// `id: ` + digits + `\nevent: ` + type + `\ndata: ` + data + `\n\n`
	return 21 + digits(event.seq) + event.type.length + event.data.length;
}

/** Decimal digits of a non-negative integer. */
function digits(n: number): number {
	let count = 1;
	while (n >= 10) {
		n = Math.floor(n / 10);
		count++;
	}
	return count;
}

/** Writes frame(event) at `at` of `out`; returns where it ends. No strings, no native calls for the head. */
function writeLineFrame(out: Uint8Array, at: number, event: LoggedEvent): number {
	// The short pieces byte by byte: TypedArray#set costs more per call than a few stores.
	for (let i = 0; i < idPrefix.length; i++) out[at++] = idPrefix[i] as number;
	let n = event.seq;
	const width = digits(n);
	for (let i = at + width - 1; i >= at; i--) {
		out[i] = 0x30 + (n % 10);
		n = Math.floor(n / 10);
	}
	at += width;
	const head = typeLinesOf(event.type);
	for (let i = 0; i < head.length; i++) out[at++] = head[i] as number;
	out.set(event.data, at);
	at += event.data.length;
	out[at++] = LF;
	out[at++] = LF;
	return at;
}

function idLine(id: string | number | undefined): string {
	if (id === undefined) return "";
	if (typeof id === "string" && !/^[\w:.-]+$/.test(id)) throw new Error(`not an SSE id: ${JSON.stringify(id)}`);
	return `id: ${id}\n`;
}

function checkedType(type: string): string {
	if (!isEventType(type)) throw new Error(`not an event type: ${JSON.stringify(type)}`);
	return type;
}

/** Rare (a record holding a raw CR): each line after a break becomes a `data:` line of its own. */
function splitData(data: Buffer): string {
	return data.toString("utf8").split(lineBreak).join("\ndata: ");
}

/** What the pump writes to: Hono's SSE stream in the app, a fake in unit tests. */
export interface Sink {
	readonly aborted: boolean;
	write(chunk: string | Uint8Array): Promise<unknown>;
}

/** Text pulled at the socket's pace (a replay from the log); undefined once there is no more. */
export type Source = () => { text: string | Uint8Array; lastId?: string | number } | undefined;

/**
 * One subscriber's outbox. Live producers push synchronously and never wait; a pump writes
 * batches to the socket at the client's pace. Past `maxBufferedBytes` of unsent live text (in
 * more than one frame) the subscriber is cut off: its queue is replaced by one `dropped` frame, `onDrop` lets the owner
 * stop feeding it at once, and a stalled reader costs a bounded amount of memory and nobody else
 * anything. A replay is pulled from a Source instead of queued, so its size does not count.
 */
export class Outbox {
	readonly #max: number;
	#chunks: Chunk[] = [];
	#bytes = 0;
	/** Strings among #chunks: with none, #bytes is the batch's exact size and no chunk is looked at twice. */
	#strings = 0;
	#pendingId: string | number | undefined;
	#ending = false;
	#dropped = false;
	#source: Source | undefined;
	#wake: (() => void) | undefined;
	/** Id of the last frame handed to the socket: where a dropped client resumes (Last-Event-ID). */
	lastSent: string | number | undefined;
	/** Called once when the subscriber is cut off. */
	onDrop: (() => void) | undefined;

	constructor(maxBufferedBytes: number) {
		this.#max = maxBufferedBytes;
	}

	get ended(): boolean {
		return this.#ending;
	}

	get dropped(): boolean {
		return this.#dropped;
	}

	/** Live text waiting for the socket. */
	get bufferedBytes(): number {
		return this.#bytes;
	}

	push(text: Chunk, id?: string | number): void {
		if (this.#ending) return;
		this.#chunks.push(text);
		this.#bytes += chunkBytes(text);
		if (typeof text === "string") this.#strings++;
		if (id !== undefined) this.#pendingId = id;
		// One frame alone is never too much (a big message_end must reach a reader that keeps up).
		if (this.#bytes > this.#max && this.#chunks.length > 1) this.#drop();
		this.#notify();
	}

	/** Pull from `source` (after what is queued now) until it runs dry. */
	pull(source: Source): void {
		this.#source = source;
		this.#notify();
	}

	/** Stop after what is already queued. */
	end(): void {
		this.#ending = true;
		this.#notify();
	}

	/** Wakes a waiting pump once: the events after the first of a burst only queue. */
	#notify(): void {
		const wake = this.#wake;
		if (wake === undefined) return;
		this.#wake = undefined;
		wake();
	}

	async pump(sink: Sink): Promise<void> {
		while (!sink.aborted) {
			let text: string | Uint8Array;
			let id: string | number | undefined;
			if (this.#chunks.length > 0) {
				const first = this.#chunks[0] as Chunk;
				if (this.#chunks.length > 1)
					text =
						this.#strings === this.#chunks.length
							? this.#chunks.join("")
							: joinChunks(this.#chunks, this.#strings === 0 ? this.#bytes : undefined);
				else if (typeof first === "string" || first instanceof Uint8Array) text = first;
				else text = singleFrame(first);
				id = this.#pendingId;
				this.#chunks = [];
				this.#bytes = 0;
				this.#strings = 0;
				this.#pendingId = undefined;
			} else if (this.#source && !this.#ending) {
				const next = this.#source();
				if (!next) {
					this.#source = undefined;
					continue;
				}
				({ text, lastId: id } = next);
				if (text.length === 0) continue;
			} else if (this.#ending) {
				return;
			} else {
				await new Promise<void>((resolve) => {
					this.#wake = resolve;
				});
				continue;
			}
			if (id !== undefined) this.lastSent = id;
			await sink.write(text);
		}
	}

	#drop(): void {
		this.#chunks = [
			gatewayFrame("dropped", {
				reason: "slow_consumer",
				detail: `more than ${this.#max} bytes were waiting for this client; reconnect with Last-Event-ID`,
				resumeFrom: this.lastSent ?? null,
			}),
		];
		this.#bytes = 0;
		this.#strings = 1;
		this.#pendingId = undefined;
		this.#dropped = true;
		this.#ending = true;
		this.onDrop?.();
	}
}

/**
 * An SSE response over Hono's streamSSE that pumps `out`, which the caller has already filled
 * and subscribed (so nothing falls between a command and its stream). `detach` unsubscribes; it
 * runs once, the moment the client goes, the subscriber is dropped, or the stream ends.
 */
export function sseStream(c: Context, options: SseOptions, out: Outbox, detach: () => void): Response {
	const response = streamSSE(c, async (stream) => {
		let detached = false;
		const stop = () => {
			if (detached) return;
			detached = true;
			detach();
			out.end();
		};
		let cutOff: NodeJS.Timeout | undefined;
		out.onDrop = () => {
			stop();
			// A reader that takes nothing more cannot be told it was dropped; free its socket.
			cutOff = setTimeout(() => {
				stream.abort();
				(c.env as { outgoing?: { destroy(): void } } | undefined)?.outgoing?.destroy();
			}, options.dropGraceMs);
			cutOff.unref();
		};
		stream.onAbort(stop);
		const heartbeat = setInterval(() => out.push(": heartbeat\n\n"), options.heartbeatMs);
		heartbeat.unref();
		try {
			if (out.dropped) out.onDrop();
			await out.pump(stream);
		} finally {
			clearInterval(heartbeat);
			clearTimeout(cutOff);
			stop();
		}
	});
	// After streamSSE, which sets its own Cache-Control: no-transform keeps proxies from re-encoding.
	response.headers.set("Cache-Control", "no-cache, no-transform");
	response.headers.set("X-Accel-Buffering", "no");
	return response;
}

/** Bytes a chunk puts on the wire (a string counts its length: near enough for a buffer bound). */
function chunkBytes(chunk: Chunk): number {
	if (typeof chunk === "string") return chunk.length;
	if (chunk instanceof Uint8Array) return chunk.byteLength;
	return lineFrameSize(chunk);
}

let lastSingle: LoggedEvent | undefined;
let lastSingleBytes: Uint8Array | undefined;

/** A live event sent alone: the same frame for every subscriber that sends it alone (fan-out at a slow pace). */
function singleFrame(event: LoggedEvent): Uint8Array {
	if (event !== lastSingle || lastSingleBytes === undefined) {
		lastSingleBytes = joinChunks([event]) as Uint8Array;
		lastSingle = event;
	}
	return lastSingleBytes;
}

/**
 * One write for a batch: strings joined, or everything written into one buffer when bytes are
 * mixed in. `bytes`, when known, is the batch's exact size (no strings in it).
 */
function joinChunks(chunks: Chunk[], bytes?: number): string | Uint8Array {
	let size = bytes ?? 0;
	if (bytes === undefined) {
		if (chunks.every((c) => typeof c === "string")) return chunks.join("");
		for (const c of chunks) size += typeof c === "string" ? Buffer.byteLength(c) : chunkBytes(c);
	}
	const out = Buffer.allocUnsafe(size);
	let at = 0;
	for (const c of chunks) {
		if (typeof c === "string") at += out.write(c, at);
		else if (c instanceof Uint8Array) {
			out.set(c, at);
			at += c.byteLength;
		} else at = writeLineFrame(out, at, c);
	}
	return out;
}
