import type { ServerResponse } from "node:http";
import { releaseBatch } from "./sse-frames.ts";

/** What the pump writes to: Node's response or the web body (sse-channels.ts), a fake in unit tests. */
export interface Sink {
	readonly aborted: boolean;
	/** Gives each written batch back to the pool once sent (releaseBatch): the pump may take pooled ones. */
	readonly recycles?: boolean;
	write(chunk: string | Uint8Array): Promise<unknown>;
}

/**
 * Where a stream's batches go once its headers are out. Node's response when the server takes
 * the stream (`takeOver`): each batch is one `res.write`, no web-stream layer in between (which
 * cost the gateway more per event than all its own work; BENCHMARKS.md, fourth pass). The web
 * body otherwise (app.request, a middleware that made a new body): pulled by whoever reads it.
 */
export interface Channel extends Sink {
	/** Ends the response after what was written. */
	close(): void;
	/** Frees the socket of a reader that takes nothing more. */
	destroy(): void;
}

const written: Promise<void> = Promise.resolve();

export class NodeChannel implements Channel {
	readonly #res: ServerResponse;
	#waiting: (() => void) | undefined;
	#aborted = false;

	constructor(res: ServerResponse, onAbort: () => void) {
		this.#res = res;
		res.on("drain", () => this.#release());
		res.once("close", () => {
			this.#aborted = true;
			this.#release();
			onAbort();
		});
	}

	get aborted(): boolean {
		return this.#aborted;
	}

	readonly recycles = true;

	write(chunk: string | Uint8Array): Promise<unknown> {
		if (this.#aborted || this.#res.writableEnded) {
			releaseBatch(chunk);
			return written;
		}
		// The callback runs once the socket is done with the chunk, sent or not.
		if (this.#res.write(chunk, () => releaseBatch(chunk))) return written;
		return new Promise<void>((resolve) => {
			this.#waiting = resolve;
		});
	}

	close(): void {
		if (!this.#aborted && !this.#res.writableEnded) this.#res.end();
	}

	destroy(): void {
		this.#res.destroy();
	}

	#release(): void {
		const waiting = this.#waiting;
		this.#waiting = undefined;
		waiting?.();
	}
}

export class WebChannel implements Channel {
	readonly #controller: ReadableStreamDefaultController<Uint8Array>;
	readonly #env: unknown;
	#waiting: (() => void) | undefined;
	aborted = false;

	constructor(controller: ReadableStreamDefaultController<Uint8Array>, env: unknown) {
		this.#controller = controller;
		this.#env = env;
	}

	write(chunk: string | Uint8Array): Promise<unknown> {
		if (this.aborted) return written;
		this.#controller.enqueue(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
		// The body's high-water mark is 0: each chunk waits for the reader's next pull.
		return new Promise<void>((resolve) => {
			this.#waiting = resolve;
		});
	}

	/** The reader asked for more. */
	pulled(): void {
		const waiting = this.#waiting;
		this.#waiting = undefined;
		waiting?.();
	}

	cancelled(): void {
		this.aborted = true;
		this.pulled();
	}

	close(): void {
		if (!this.aborted) this.#controller.close();
	}

	destroy(): void {
		this.cancelled();
		(this.#env as { outgoing?: { destroy(): void } } | undefined)?.outgoing?.destroy();
	}
}
