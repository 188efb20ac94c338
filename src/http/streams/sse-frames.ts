import { isEventType } from "../../pi/event-type.ts";
import type { LoggedEvent } from "../../sessions/events/index.ts";
import { giveSlab, slabBytes, takeSlab } from "../../shared/slabs.ts";

// SSE frames as wire bytes, and the batches an outbox sends: everything here is built so that no
// field can hold CR or LF (the SSE line breaks), and pi's bytes are copied once, into the batch.

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
		// Checks the type before it is queued (it throws for one that could forge a frame).
		typeLinesOf(event.type);
		const data = event.data;
		lastFrame = data.indexOf(LF) !== -1 || data.indexOf(CR) !== -1 ? frame(event) : event;
		lastEvent = event;
	}
	return lastFrame;
}

/**
 * A frame another node sent, as its parsed fields (the cluster hub passes them on): the same
 * `id:`, `event:` and `data:` (one line per line of data, as it was read), checked like our own.
 */
export function relayedFrame(frame: { id: string | undefined; event: string; data: string }): string {
	return `${idLine(frame.id)}event: ${checkedType(frame.event)}\ndata: ${frame.data.split(lineBreak).join("\ndata: ")}\n\n`;
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

/** Bytes a chunk puts on the wire (a string counts its length: near enough for a buffer bound). */
export function chunkBytes(chunk: Chunk): number {
	if (typeof chunk === "string") return chunk.length;
	if (chunk instanceof Uint8Array) return chunk.byteLength;
	return lineFrameSize(chunk);
}

let lastSingle: LoggedEvent | undefined;
let lastSingleBytes: Uint8Array | undefined;

/** A live event sent alone: the same frame for every subscriber that sends it alone (fan-out at a slow pace). */
export function singleFrame(event: LoggedEvent): Uint8Array {
	if (event !== lastSingle || lastSingleBytes === undefined) {
		lastSingleBytes = joinChunks([event]) as Uint8Array;
		lastSingle = event;
	}
	return lastSingleBytes;
}

/**
 * One write for a batch: strings joined, or everything written into one buffer when bytes are
 * mixed in. `bytes`, when known, is the batch's exact size (no strings in it). `pooled`: the
 * buffer may come from the batch pool, for a sink that gives it back (releaseBatch) once written.
 */
export function joinChunks(chunks: Chunk[], bytes?: number, pooled = false): string | Uint8Array {
	let size = bytes ?? 0;
	if (bytes === undefined) {
		if (chunks.every((c) => typeof c === "string")) return chunks.join("");
		for (const c of chunks) size += typeof c === "string" ? Buffer.byteLength(c) : chunkBytes(c);
	}
	const out = pooled && size <= slabBytes ? Buffer.from(takeSlab(), 0, size) : Buffer.allocUnsafe(size);
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

/** The socket has sent `chunk` (or will never send it): a batch's slab serves a later one. */
export function releaseBatch(chunk: string | Uint8Array): void {
	if (typeof chunk !== "string") giveSlab(chunk.buffer);
}
