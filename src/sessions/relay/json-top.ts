import { setImmediate as nextTurn } from "node:timers/promises";

/**
 * The top-level members of a JSON object, read from its bytes without building it: which model a
 * call asks for, whether it streams, whether it runs in the background (request-body.ts). An
 * untrusted body of 32 MiB given to JSON.parse can cost seconds and most of a gigabyte (32 MiB of
 * `[{},{},…]` took 17.7 s and 716 MB here). This walks it once and allocates nothing for what it
 * skips: strings are skipped with Buffer.indexOf, containers matched bracket for bracket, scalars
 * not checked (a provider refuses a malformed body, and bills nothing for it). It gives the event
 * loop back every `sliceSteps` steps, so one call's body never holds the gateway for long.
 */

/** A top-level member: its name (escapes decoded, as a JSON parser reads it) and its value's bytes. */
export interface Member {
	name: string;
	/** The value's first byte and the byte after its last. */
	start: number;
	end: number;
}

export interface TopLevel {
	/** Every top-level member in order, duplicates included (a parser keeps the last). */
	members: Member[];
	/** The index of the object's `{`. */
	open: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const isSpace = (byte: number) => byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
const isOpener = (byte: number) => byte === 0x7b || byte === 0x5b;
const isCloser = (byte: number) => byte === 0x7d || byte === 0x5d;
/** Containers nested deeper than this are refused (no provider's parser takes millions). */
const maxDepth = 512;
/** Steps (a byte in a container, an escape or a quote in a string) between two turns of the event loop. */
const sliceSteps = 1 << 18;
/** What one search of a string (Buffer.indexOf, a call into native code) counts as: about a byte's loop each. */
const searchSteps = 16;

type Expect = "open" | "nameOrClose" | "name" | "colon" | "value" | "commaOrClose" | "end";

class Walk {
	readonly bytes: Buffer;
	readonly members: Member[] = [];
	open = -1;
	failed = false;
	#i = 0;
	#expect: Expect = "open";
	/** Depth of containers: 1 inside the top-level object, 2+ inside a member's value. */
	#depth = 0;
	#closers = new Uint8Array(maxDepth + 1);
	/** A string being skipped: where it began (-1: none). */
	#string = -1;
	/** Where the next quote and backslash are (-2: not looked for yet, -1: none left), kept across strings. */
	#quote = -2;
	#backslash = -2;
	#name = "";
	#valueStart = -1;

	constructor(bytes: Buffer) {
		this.bytes = bytes;
	}

	get finished(): boolean {
		return this.failed || (this.#expect === "end" && this.#i >= this.bytes.length);
	}

	/** Walks on for at most about `steps`; the walk is finished, failed or not, when `finished`. */
	run(steps: number): void {
		const { bytes } = this;
		let left = steps;
		while (left > 0 && !this.finished) {
			if (this.#string !== -1) left = this.#skipString(left);
			else if (this.#i >= bytes.length) {
				this.failed = true;
				return;
			} else if (this.#depth >= 2) left = this.#inValue(left);
			else {
				const byte = bytes[this.#i] as number;
				if (isSpace(byte)) this.#i++;
				else this.#atTop(byte);
				left--;
			}
		}
	}

	/**
	 * A string, up to `left` steps of it (an escape or a quote, each `searchSteps`): it ends at a quote
	 * no backslash escapes. The next quote and backslash are looked for once each, so each byte is
	 * searched once.
	 */
	#skipString(left: number): number {
		const { bytes } = this;
		let i = this.#i;
		let quote = this.#quote;
		let backslash = this.#backslash;
		for (; left > 0; left -= searchSteps) {
			if (quote < i) quote = bytes.indexOf(QUOTE, i);
			if (quote === -1) {
				this.failed = true;
				return left;
			}
			if (backslash !== -1 && backslash < i) backslash = bytes.indexOf(BACKSLASH, i);
			if (backslash === -1 || backslash > quote) break;
			i = backslash + 2;
		}
		this.#quote = quote;
		this.#backslash = backslash;
		if (left <= 0) {
			this.#i = i;
			return 0;
		}
		const start = this.#string;
		this.#i = quote + 1;
		this.#string = -1;
		this.#stringEnded(start, this.#i);
		return left - searchSteps;
	}

	#startString(): void {
		this.#string = this.#i;
		this.#i++;
	}

	#stringEnded(start: number, end: number): void {
		if (this.#depth >= 2) return;
		if (this.#expect === "name") {
			// A name longer than any the relay reads (each escaped in full fits) is kept as "".
			this.#name = "";
			if (end - start <= 256)
				try {
					this.#name = JSON.parse(this.bytes.toString("utf8", start, end));
				} catch {
					this.failed = true;
					return;
				}
			this.#expect = "colon";
		} else this.#member(start, end);
	}

	#member(start: number, end: number): void {
		this.members.push({ name: this.#name, start, end });
		this.#expect = "commaOrClose";
	}

	/** Up to `left` bytes inside a member's container value, where only strings and brackets matter. */
	#inValue(left: number): number {
		const { bytes } = this;
		const closers = this.#closers;
		const end = Math.min(bytes.length, this.#i + left);
		let i = this.#i;
		let depth = this.#depth;
		for (; i < end; i++) {
			const byte = bytes[i] as number;
			if (byte === QUOTE) break;
			if (byte === 0x7b || byte === 0x5b) {
				if (depth > maxDepth) break;
				closers[depth++] = byte + 2;
			} else if (byte === 0x7d || byte === 0x5d) {
				if (closers[--depth] !== byte) {
					depth = -1;
					break;
				}
				if (depth === 1) break;
			}
		}
		const used = i - this.#i;
		this.#i = i;
		this.#depth = depth;
		if (i === end) return left - used;
		const byte = bytes[i] as number;
		if (byte === QUOTE) this.#startString();
		else if (depth === 1 && isCloser(byte)) {
			this.#i++;
			this.#member(this.#valueStart, this.#i);
		} else this.failed = true;
		return left - used - 1;
	}

	/** A byte (not a space) of the top-level object's own syntax. */
	#atTop(byte: number): void {
		const expect = this.#expect;
		if (expect === "open" && byte === 0x7b) {
			this.open = this.#i++;
			this.#depth = 1;
			this.#expect = "nameOrClose";
		} else if ((expect === "nameOrClose" || expect === "commaOrClose") && byte === 0x7d) {
			this.#i++;
			this.#depth = 0;
			this.#expect = "end";
		} else if ((expect === "nameOrClose" || expect === "name") && byte === QUOTE) {
			this.#expect = "name";
			this.#startString();
		} else if (expect === "colon" && byte === 0x3a) {
			this.#i++;
			this.#expect = "value";
		} else if (expect === "commaOrClose" && byte === 0x2c) {
			this.#i++;
			this.#expect = "name";
		} else if (expect === "value") this.#value(byte);
		else this.failed = true;
	}

	#value(byte: number): void {
		const { bytes } = this;
		if (byte === QUOTE) {
			this.#startString();
			return;
		}
		if (isOpener(byte)) {
			this.#valueStart = this.#i++;
			this.#closers[1] = byte + 2;
			this.#depth = 2;
			return;
		}
		// A scalar: a number, true, false or null, never longer than this.
		const start = this.#i;
		const last = Math.min(bytes.length, start + 1024);
		while (this.#i < last) {
			const next = bytes[this.#i] as number;
			if (next === 0x2c || isCloser(next) || isSpace(next)) break;
			if (next === QUOTE || isOpener(next) || next === 0x3a) {
				this.failed = true;
				return;
			}
			this.#i++;
		}
		if (this.#i === start || this.#i === start + 1024) {
			this.failed = true;
			return;
		}
		this.#member(start, this.#i);
	}
}

/** The top-level members of `bytes` when they hold one JSON object (space around it allowed), else undefined. */
export async function topLevel(bytes: Buffer): Promise<TopLevel | undefined> {
	const walk = new Walk(bytes);
	for (;;) {
		walk.run(sliceSteps);
		if (walk.finished) break;
		await nextTurn();
	}
	return walk.failed ? undefined : { members: walk.members, open: walk.open };
}

/** A member's value decoded, when it is at most `maxBytes` long and valid JSON; else undefined. */
export function small(bytes: Buffer, member: Member, maxBytes = 1024): unknown {
	if (member.end - member.start > maxBytes) return undefined;
	try {
		return JSON.parse(bytes.toString("utf8", member.start, member.end));
	} catch {
		return undefined;
	}
}
