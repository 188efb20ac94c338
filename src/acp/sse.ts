/** One Server-Sent Events frame as the gateway writes it: `id:`, `event:`, one `data:` line of JSON. */
export interface Frame {
	id?: string;
	event?: string;
	data: string;
}

/** One SSE block (the text between blank lines) as a frame; undefined for comments (heartbeats). */
export function parseBlock(block: string): Frame | undefined {
	const frame: Partial<Frame> = {};
	const data: string[] = [];
	for (const line of block.split(/\r?\n/)) {
		if (line === "" || line.startsWith(":")) continue;
		const colon = line.indexOf(":");
		const field = colon === -1 ? line : line.slice(0, colon);
		const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "");
		if (field === "id") frame.id = value;
		else if (field === "event") frame.event = value;
		else if (field === "data") data.push(value);
	}
	if (data.length === 0 && frame.event === undefined) return undefined;
	return { ...frame, data: data.join("\n") };
}

/** The longest frame the bridge holds (characters of text, about bytes): past it the stream fails. */
export const maxFrameChars = 16 * 1024 * 1024;

/** A frame longer than the cap: the stream it came on is given up, not retried (it would send it again). */
export class FrameTooLarge extends Error {}

/**
 * The frames of a text/event-stream body, in order; ends when the body ends (or throws when it is
 * cut, or when a frame passes `max` characters without its blank line: FrameTooLarge, and the body
 * is cancelled). Each chunk's text is normalised and searched once, and a long frame's parts are
 * joined once, when it ends: a big frame costs its length, not its length times its chunks.
 */
export async function* readFrames(body: ReadableStream<Uint8Array>, max = maxFrameChars): AsyncGenerator<Frame> {
	const decoder = new TextDecoder();
	/** The frame so far: its parts, their length, and whether they end with a line feed. */
	let parts: string[] = [];
	let held = 0;
	let endsWithLf = false;
	// A CR at a chunk's end may be half of a CRLF: it waits for the next chunk.
	let carriage = "";
	const take = (last: string): Frame | undefined => {
		parts.push(last);
		const frame = parseBlock(parts.join(""));
		parts = [];
		held = 0;
		endsWithLf = false;
		return frame;
	};
	for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
		let text = carriage + decoder.decode(chunk, { stream: true });
		carriage = text.endsWith("\r") ? "\r" : "";
		if (carriage) text = text.slice(0, -1);
		text = text.replaceAll("\r\n", "\n");
		if (text.length === 0) continue;
		let start = 0;
		// The blank line began in the chunk before.
		if (endsWithLf && text.startsWith("\n")) {
			start = 1;
			const frame = take("");
			if (frame) yield frame;
		}
		for (let end = text.indexOf("\n\n", start); end !== -1; end = text.indexOf("\n\n", start)) {
			const frame = take(text.slice(start, end));
			start = end + 2;
			if (frame) yield frame;
		}
		if (start < text.length) {
			parts.push(start === 0 ? text : text.slice(start));
			held += text.length - start;
			endsWithLf = text.endsWith("\n");
		}
		if (held > max)
			throw new FrameTooLarge(
				`An event stream frame passed ${max / (1024 * 1024)} MiB without its end: the stream was given up`,
			);
	}
}
