export interface Frame {
	id?: string;
	event?: string;
	data: string;
	/** `data` parsed as JSON. */
	json: any;
}

/**
 * A small spec-following SSE reader over fetch: splits on blank lines, keeps id/event/data,
 * skips comments. Used instead of EventSource where a test needs exact frames.
 */
export async function* readFrames(res: Response): AsyncGenerator<Frame> {
	if (!res.body) return;
	const decoder = new TextDecoder();
	let buffer = "";
	for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
		buffer += decoder.decode(chunk, { stream: true });
		for (let end = buffer.indexOf("\n\n"); end !== -1; end = buffer.indexOf("\n\n")) {
			const block = buffer.slice(0, end);
			buffer = buffer.slice(end + 2);
			const frame = parseBlock(block);
			if (frame) yield frame;
		}
	}
}

/** One SSE block (the text between blank lines) as a frame; undefined for comments only. */
export function parseBlock(block: string): Frame | undefined {
	const frame: Partial<Frame> = {};
	const data: string[] = [];
	for (const line of block.split("\n")) {
		if (line.startsWith(":")) continue;
		const colon = line.indexOf(":");
		const field = colon === -1 ? line : line.slice(0, colon);
		const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "");
		if (field === "id") frame.id = value;
		else if (field === "event") frame.event = value;
		else if (field === "data") data.push(value);
	}
	if (data.length === 0 && frame.event === undefined) return undefined;
	const text = data.join("\n");
	let json: unknown;
	try {
		json = JSON.parse(text);
	} catch {}
	return { ...frame, data: text, json } as Frame;
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
