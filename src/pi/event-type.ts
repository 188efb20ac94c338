/**
 * The one rule for what may name an event: pi's types are snake_case words, and the name is
 * written after `event: ` in SSE frames and matched by `?types=`. Anything else (a type holding
 * a line break, a colon, a space) could forge frames, so such a record is not an event.
 */
const eventTypePattern = /^[a-z_]{1,64}$/;

export function isEventType(type: unknown): type is string {
	return typeof type === "string" && eventTypePattern.test(type);
}

const typePrefix = Buffer.from('{"type":"');
const QUOTE = 0x22;
const CLOSE_BRACE = 0x7d;

/**
 * The type of a record that starts `{"type":"…"` and ends `}` (pi's own layout), else undefined:
 * read from the bytes, so the hot path forwards a record without decoding or parsing it.
 */
export function typeOf(line: Buffer): string | undefined {
	const from = typePrefix.length;
	if (line.length <= from || line[line.length - 1] !== CLOSE_BRACE) return undefined;
	// A loop, not Buffer.compare: nine bytes are cheaper compared here than through a native call.
	for (let i = 0; i < from; i++) if (line[i] !== typePrefix[i]) return undefined;
	const end = line.indexOf(QUOTE, from);
	// A valid type is at most 64 ASCII letters, so a longer or non-ASCII one fails isEventType anyway.
	if (end === -1 || end - from > 64) return undefined;
	// pi prints runs of one type (a stream of message_update): the type read last is compared in
	// place, so the common case makes no string and runs no pattern.
	const length = end - from;
	if (length === lastType.length) {
		let same = true;
		for (let i = 0; i < length; i++) {
			if (line[from + i] !== lastType.charCodeAt(i)) {
				same = false;
				break;
			}
		}
		if (same) return lastType;
	}
	const type = line.toString("latin1", from, end);
	if (!isEventType(type)) return undefined;
	lastType = type;
	return type;
}

/** The last type typeOf accepted (so it passed isEventType: ASCII, and equal bytes mean an equal type). */
let lastType = "";

/** A record of pi's the gateway reads (a response, a UI request), parsed, or why it is no record. */
export type ReadRecord =
	| { record: { type: string; [field: string]: unknown }; problem?: undefined }
	| { problem: string; text: string };

/** Parses a line of pi's stdout that typeOf could not read: JSON, an object, a valid type. */
export function readRecord(line: Buffer): ReadRecord {
	const text = line.toString("utf8");
	let record: { type?: unknown };
	try {
		record = JSON.parse(text);
	} catch {
		return { problem: "pi printed a non-JSON line; skipped", text };
	}
	if (typeof record !== "object" || record === null || typeof record.type !== "string")
		return { problem: "pi printed a record without a type", text };
	if (!isEventType(record.type)) return { problem: "pi printed a record of no valid type", text };
	return { record: record as { type: string } };
}
