import { LineParser, parseSse } from "./sse-parser.ts";

export { FrameTooLarge } from "./sse-parser.ts";

/** One Server-Sent Events frame as the gateway writes it: `id:`, `event:`, one `data:` line of JSON. */
export interface Frame {
	id?: string;
	event?: string;
	data: string;
}

/** The longest frame the bridge holds (characters of text, about bytes): past it the stream fails. */
export const maxFrameChars = 16 * 1024 * 1024;

const asFrame = (frame: { id: string | undefined; event: string; data: string }): Frame => ({
	...(frame.id === undefined ? {} : { id: frame.id }),
	...(frame.event === "message" ? {} : { event: frame.event }),
	data: frame.data,
});

/** One SSE block (the text between blank lines) as a frame; undefined for comments (heartbeats). */
export function parseBlock(block: string): Frame | undefined {
	for (const frame of new LineParser().feed(`${block}\n\n`, true)) return asFrame(frame);
	return undefined;
}

/**
 * The frames of a text/event-stream body, in order, read by the client's parser (sse-parser.ts);
 * ends when the body ends (or throws when it is cut, or when a frame passes `max` characters
 * without its blank line: FrameTooLarge, and the body is cancelled).
 */
export async function* readFrames(body: ReadableStream<Uint8Array>, max = maxFrameChars): AsyncGenerator<Frame> {
	for await (const frame of parseSse(body, { maxFrameChars: max })) yield asFrame(frame);
}
