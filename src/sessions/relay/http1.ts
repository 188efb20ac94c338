/**
 * The framing of a provider's HTTP/1.1 answer, read by the relay's own client (upstream.ts): the
 * head once, then the body's bytes out of their framing a read at a time. node:http's client hands
 * on each chunk of a chunked answer apart (a call out of its parser, a stream push and an event
 * apiece), and a model streams one chunk a token: that was about 3 µs a token in the relay, its
 * largest cost (BENCHMARKS.md, "The model relay against a direct call"). Here a chunk costs a few
 * byte comparisons, and a read's data goes on as one buffer.
 */

/** An answer's header fields by lower-case name; a name sent more than once keeps each value. */
export type AnswerHeaders = Record<string, string | string[]>;

export interface AnswerHead {
	status: number;
	/** HTTP/1.`minor`. */
	minor: number;
	headers: AnswerHeaders;
	/** Bytes the head took, its empty line included. */
	length: number;
}

/** An answer the relay cannot read as HTTP/1.1: the call fails (502, or cut once the head was passed on). */
export class FramingError extends Error {}

/** A head past this is refused (node:http's own limit is 16 KiB). */
export const maxHeadBytes = 64 * 1024;
const token = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const fieldValue = /^[\t\x20-\x7e\x80-\xff]*$/;
const statusLine = /^HTTP\/1\.([01]) ([1-9]\d\d)(?: [\t\x20-\x7e\x80-\xff]*)?$/;

const crlfEnd = Buffer.from([10, 13, 10]);
const lfEnd = Buffer.from([10, 10]);

/** Where the head's empty line ends (CRLF or a bare LF), or -1. */
function headEnd(bytes: Buffer): number {
	const crlf = bytes.indexOf(crlfEnd);
	const lf = bytes.indexOf(lfEnd);
	if (crlf === -1) return lf === -1 ? -1 : lf + 2;
	return lf === -1 || crlf < lf ? crlf + 3 : lf + 2;
}

/** The head at the start of `bytes`, or undefined while its end has not come. */
export function readHead(bytes: Buffer): AnswerHead | undefined {
	const end = headEnd(bytes);
	if (end > maxHeadBytes || (end === -1 && bytes.length > maxHeadBytes))
		throw new FramingError(`an answer head over ${maxHeadBytes} bytes`);
	if (end === -1) return undefined;
	const lines = bytes.toString("latin1", 0, end).split(/\r?\n/);
	const status = statusLine.exec(lines[0] ?? "");
	if (!status) throw new FramingError("not an HTTP/1.x status line");
	const headers: AnswerHeaders = {};
	for (const line of lines.slice(1)) {
		if (line === "") break;
		const colon = line.indexOf(":");
		const name = line.slice(0, Math.max(colon, 0));
		// An obs-fold (a line that starts with a space) has no name before its colon, or a bad one.
		if (!token.test(name)) throw new FramingError("a malformed header line");
		const value = line.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, "");
		if (!fieldValue.test(value)) throw new FramingError(`a control character in the ${name} header`);
		const key = name.toLowerCase();
		const seen = headers[key];
		headers[key] = seen === undefined ? value : [...(Array.isArray(seen) ? seen : [seen]), value];
	}
	return { status: Number(status[2]), minor: Number(status[1]), headers, length: end };
}

/** The comma-separated list a field's values make. */
export const listOf = (value: string | string[] | undefined): string[] =>
	value === undefined
		? []
		: (Array.isArray(value) ? value : [value])
				.join(",")
				.split(",")
				.map((v) => v.trim())
				.filter((v) => v !== "");

export type Framing = { kind: "none" } | { kind: "length"; length: number } | { kind: "chunked" } | { kind: "close" };

/** How the body of an answer to `method` is delimited (RFC 9112 §6.3). */
export function framingOf(method: string, head: AnswerHead): Framing {
	if (method === "HEAD" || head.status < 200 || head.status === 204 || head.status === 304) return { kind: "none" };
	const te = head.headers["transfer-encoding"];
	const cl = head.headers["content-length"];
	// Both at once is how a response is smuggled past one parser to another; node:http refuses it too.
	if (te !== undefined && cl !== undefined) throw new FramingError("both transfer-encoding and content-length");
	if (te !== undefined) return listOf(te).at(-1)?.toLowerCase() === "chunked" ? { kind: "chunked" } : { kind: "close" };
	if (cl !== undefined) {
		const lengths = listOf(cl);
		if (lengths.length === 0 || !lengths.every((v) => /^\d{1,15}$/.test(v)) || new Set(lengths).size !== 1)
			throw new FramingError("a malformed content-length");
		return { kind: "length", length: Number(lengths[0]) };
	}
	return { kind: "close" };
}

const maxLineBytes = 8 * 1024;
const CR = 13;
const LF = 10;

/**
 * Where a chunked body's reader is: a chunk's size, the rest of its line (an extension, the CR's LF),
 * its data, the line end after the data (the LF after a CR), a trailer line.
 */
type Step = "size" | "extension" | "sizeEnd" | "data" | "dataEnd" | "dataLf" | "trailer";

/**
 * Takes a body's data out of its framing as the reads come (`take`); `done` once the body ended.
 * The data of one read comes back as one buffer: a view of the read when it holds one piece, else
 * one copy of the pieces.
 */
export class BodyReader {
	done = false;
	/** Bytes after the body's end in the read that ended it (the connection is then not reused). */
	extra = 0;
	readonly framing: Framing;
	/** Data bytes left: of the body (length), of the chunk (chunked). */
	#left = 0;
	#step: Step = "size";
	#digits = 0;
	/** A size line's or a trailer line's bytes so far. */
	#line = 0;

	constructor(framing: Framing) {
		this.framing = framing;
		if (framing.kind === "none") this.done = true;
		if (framing.kind === "length") {
			this.#left = framing.length;
			this.done = framing.length === 0;
		}
	}

	take(bytes: Buffer): Buffer {
		if (this.done) {
			this.extra += bytes.length;
			return bytes.subarray(0, 0);
		}
		if (this.framing.kind === "close") return bytes;
		if (this.framing.kind === "length") {
			const n = Math.min(this.#left, bytes.length);
			this.#left -= n;
			this.done = this.#left === 0;
			this.extra = bytes.length - n;
			return n === bytes.length ? bytes : bytes.subarray(0, n);
		}
		return this.#chunked(bytes);
	}

	/** The connection ended: the end of a body delimited by it, else (false) a body cut short. */
	closed(): boolean {
		if (this.framing.kind === "close") this.done = true;
		return this.done;
	}

	#chunked(bytes: Buffer): Buffer {
		const pieces: Buffer[] = [];
		let total = 0;
		let i = 0;
		while (i < bytes.length && !this.done) {
			if (this.#step === "data") {
				const n = Math.min(this.#left, bytes.length - i);
				pieces.push(bytes.subarray(i, i + n));
				total += n;
				i += n;
				this.#left -= n;
				if (this.#left === 0) this.#step = "dataEnd";
				continue;
			}
			const byte = bytes[i++] as number;
			if (this.#step === "size") this.#size(byte);
			else if (this.#step === "extension" || this.#step === "sizeEnd" || this.#step === "trailer") this.#lineByte(byte);
			else if (byte === LF) this.#step = "size";
			else if (byte === CR && this.#step === "dataEnd") this.#step = "dataLf";
			else throw new FramingError("no line end after a chunk's data");
		}
		if (this.done) this.extra = bytes.length - i;
		if (pieces.length === 1) return pieces[0] as Buffer;
		return Buffer.concat(pieces, total);
	}

	/** One byte of a chunk's size: hex digits, then an extension (`;…`) or the line's end. */
	#size(byte: number): void {
		const digit =
			byte >= 48 && byte <= 57 ? byte - 48 : (byte | 32) >= 97 && (byte | 32) <= 102 ? (byte | 32) - 87 : -1;
		if (digit >= 0) {
			// 13 hex digits: still a safe integer.
			if (++this.#digits > 13) throw new FramingError("a chunk size too large");
			this.#left = this.#left * 16 + digit;
			return;
		}
		if (this.#digits === 0) throw new FramingError("a chunk without a size");
		if (byte === CR) this.#step = "sizeEnd";
		else if (byte === LF) this.#sized();
		else if (byte === 0x3b || byte === 0x20 || byte === 0x09) this.#step = "extension";
		else throw new FramingError("a malformed chunk size");
	}

	/** A byte of the rest of a size line, or of a trailer line (read past, not kept). */
	#lineByte(byte: number): void {
		if (byte !== LF) {
			if (this.#step === "sizeEnd") throw new FramingError("a malformed chunk size line");
			// A CR is not counted: a trailer line of nothing but it is the empty line.
			if (byte !== CR && ++this.#line > maxLineBytes) throw new FramingError("a chunk size or trailer line too long");
			return;
		}
		if (this.#step === "trailer") {
			// The empty line ends the trailers, and the body.
			if (this.#line === 0) this.done = true;
			this.#line = 0;
			return;
		}
		this.#sized();
	}

	/** A size line ended: its chunk's data next, or after the last chunk (size 0) the trailers. */
	#sized(): void {
		this.#step = this.#left === 0 ? "trailer" : "data";
		this.#digits = 0;
		this.#line = 0;
	}
}
