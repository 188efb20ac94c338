import { LineParser, parseSse, type SseFrame } from "../../src/client/sse.ts";

export interface Frame {
	id?: string;
	event?: string;
	data: string;
	/** `data` parsed as JSON. */
	json: any;
}

const asFrame = (frame: SseFrame): Frame => {
	let json: unknown;
	try {
		json = JSON.parse(frame.data);
	} catch {}
	return {
		...(frame.id === undefined ? {} : { id: frame.id }),
		...(frame.event === "message" ? {} : { event: frame.event }),
		data: frame.data,
		json,
	};
};

/** The frames of a response, read by the first-party client's parser (one parser for client, bridge, hub and tests). */
export async function* readFrames(res: Response): AsyncGenerator<Frame> {
	if (!res.body) return;
	for await (const frame of parseSse(res.body)) yield asFrame(frame);
}

/** The complete frames of an event stream's text (comments skipped; an unfinished last frame is not one). */
export function parseText(text: string): Frame[] {
	return [...new LineParser().feed(text, true)].map(asFrame);
}

/** Reads frames until `stop` returns true (inclusive) or the stream ends. */
export async function collect(res: Response, stop?: (f: Frame) => boolean, max = 1_000_000): Promise<Frame[]> {
	const frames: Frame[] = [];
	for await (const frame of readFrames(res)) {
		frames.push(frame);
		if (stop?.(frame) || frames.length >= max) break;
	}
	return frames;
}
