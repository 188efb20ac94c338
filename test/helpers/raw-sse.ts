import http from "node:http";
import type { Socket } from "node:net";
import { type Frame, parseText, readFrames } from "./sse.ts";

/**
 * An SSE stream read over a plain node:http socket, for what fetch hides: stop reading
 * (a stalled client), destroy the socket (a client that vanishes), see the raw bytes.
 */
export interface RawStream {
	res: http.IncomingMessage;
	socket: Socket;
	/** Everything received so far, decoded as UTF-8 at the end (so split characters survive). */
	text(): string;
	bytes(): Buffer;
	/** Resolves when the server ended the response or the socket closed. */
	closed: Promise<void>;
}

export function openRaw(url: string, headers: Record<string, string> = {}): Promise<RawStream> {
	return new Promise((resolve, reject) => {
		const req = http.get(url, { headers: { accept: "text/event-stream", ...headers } }, (res) => {
			const chunks: Buffer[] = [];
			res.on("data", (chunk: Buffer) => chunks.push(chunk));
			const closed = new Promise<void>((done) => {
				res.on("end", done);
				res.on("close", done);
				res.on("error", () => done());
			});
			resolve({
				res,
				socket: res.socket,
				text: () => Buffer.concat(chunks).toString("utf8"),
				bytes: () => Buffer.concat(chunks),
				closed,
			});
		});
		req.on("error", reject);
	});
}

/** The complete SSE frames of raw text (comments skipped), read by the client's parser. */
export function parseFrames(text: string): Frame[] {
	return parseText(text);
}

/** Reads frames in steps from one response: `until` stops without closing the stream, `rest` reads to its end. */
export function frameReader(res: Response) {
	const iterator = readFrames(res)[Symbol.asyncIterator]();
	const frames: Frame[] = [];
	const step = async () => {
		const next = await iterator.next();
		if (next.done) return undefined;
		frames.push(next.value);
		return next.value;
	};
	return {
		frames,
		/** Reads until `stop` holds for a frame (inclusive); throws if the stream ends first. */
		async until(stop: (frame: Frame) => boolean): Promise<Frame> {
			for (;;) {
				const frame = await step();
				if (!frame) throw new Error("the stream ended first");
				if (stop(frame)) return frame;
			}
		},
		/** Reads until the server ends the stream. */
		async rest(): Promise<Frame[]> {
			while (await step());
			return frames;
		},
	};
}
