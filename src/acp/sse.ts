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

/** The frames of a text/event-stream body, in order; ends when the body ends (or throws when it is cut). */
export async function* readFrames(body: ReadableStream<Uint8Array>): AsyncGenerator<Frame> {
	const decoder = new TextDecoder();
	let buffer = "";
	for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
		buffer += decoder.decode(chunk, { stream: true }).replaceAll("\r\n", "\n");
		for (let end = buffer.indexOf("\n\n"); end !== -1; end = buffer.indexOf("\n\n")) {
			const frame = parseBlock(buffer.slice(0, end));
			buffer = buffer.slice(end + 2);
			if (frame) yield frame;
		}
	}
}
