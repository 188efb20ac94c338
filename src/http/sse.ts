import type { Context } from "hono";
import { type SSEStreamingApi, streamSSE } from "hono/streaming";
import type { LoggedEvent } from "../sessions/event-log.ts";

export interface SseOptions {
	heartbeatMs: number;
	maxBufferedBytes: number;
}

/** `id:`, `event:` and pi's line as `data:` (one line: JSON has no raw CR/LF). */
export function frame(event: LoggedEvent, id: string | number = event.seq): string {
	return `id: ${id}\nevent: ${event.type}\ndata: ${event.data}\n\n`;
}

export function gatewayFrame(type: string, fields: Record<string, unknown>, id?: string | number): string {
	const idLine = id === undefined ? "" : `id: ${id}\n`;
	return `${idLine}event: ${type}\ndata: ${JSON.stringify({ type, ...fields })}\n\n`;
}

/**
 * One subscriber's outbox. Producers push synchronously and never wait; a pump writes batches
 * to the socket at the client's pace. Past `maxBufferedBytes` the subscriber is cut off with a
 * final `dropped` frame, so a stalled reader costs a bounded amount of memory and nobody else.
 */
export class Outbox {
	readonly #max: number;
	#chunks: string[] = [];
	#bytes = 0;
	#ending = false;
	#wake: (() => void) | undefined;
	/** Seq of the last event handed to the socket: where a dropped client should resume. */
	lastSent: string | number | undefined;
	#pendingId: string | number | undefined;

	constructor(maxBufferedBytes: number) {
		this.#max = maxBufferedBytes;
	}

	get ended(): boolean {
		return this.#ending;
	}

	push(text: string, id?: string | number): void {
		if (this.#ending) return;
		this.#chunks.push(text);
		this.#bytes += text.length;
		if (id !== undefined) this.#pendingId = id;
		if (this.#bytes > this.#max) {
			this.#chunks = [
				gatewayFrame("dropped", {
					reason: "slow_consumer",
					detail: `more than ${this.#max} bytes were waiting for this client; reconnect with Last-Event-ID`,
					resumeFrom: this.lastSent ?? null,
				}),
			];
			this.#bytes = 0;
			this.#ending = true;
		}
		this.#wake?.();
	}

	/** Stop after what is already queued. */
	end(): void {
		this.#ending = true;
		this.#wake?.();
	}

	async pump(stream: SSEStreamingApi): Promise<void> {
		while (!stream.aborted) {
			if (this.#chunks.length > 0) {
				const batch = this.#chunks.length === 1 ? (this.#chunks[0] as string) : this.#chunks.join("");
				const id = this.#pendingId;
				this.#chunks = [];
				this.#bytes = 0;
				await stream.write(batch);
				if (id !== undefined) this.lastSent = id;
				continue;
			}
			if (this.#ending) return;
			await new Promise<void>((resolve) => {
				this.#wake = resolve;
			});
			this.#wake = undefined;
		}
	}
}

/**
 * An SSE response over Hono's streamSSE. `attach` queues the opening frames and subscribes,
 * synchronously, so nothing falls between replay and live events; it returns the unsubscribe.
 */
export function sseStream(c: Context, options: SseOptions, attach: (out: Outbox) => () => void): Response {
	c.header("X-Accel-Buffering", "no");
	c.header("Cache-Control", "no-cache, no-transform");
	return streamSSE(c, async (stream) => {
		const out = new Outbox(options.maxBufferedBytes);
		let detach: (() => void) | undefined;
		const stop = () => {
			detach?.();
			detach = undefined;
			out.end();
		};
		stream.onAbort(stop);
		const heartbeat = setInterval(() => out.push(": heartbeat\n\n"), options.heartbeatMs);
		try {
			detach = attach(out);
			await out.pump(stream);
		} finally {
			clearInterval(heartbeat);
			stop();
		}
	});
}
