import type { ServerResponse } from "node:http";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import type { Context } from "hono";
import { pinEvent, unpinEvent } from "../../sessions/events/index.ts";
import type { AppEnv } from "../transport/openapi.ts";
import { type Channel, NodeChannel, type Sink, WebChannel } from "./sse-channels.ts";
import { type Chunk, chunkBytes, gatewayFrame, joinChunks, singleFrame } from "./sse-frames.ts";

export interface SseOptions {
	heartbeatMs: number;
	/** Unsent text a live subscriber may hold before it is cut off. */
	maxBufferedBytes: number;
	/** How long a cut-off subscriber's socket gets to take its final frame before it is closed. */
	dropGraceMs: number;
}

export type { Sink };

/** Text pulled at the socket's pace (a replay from the log); undefined once there is no more. */
export type Source = () => { text: string | Uint8Array; lastId?: string | number } | undefined;

/**
 * One subscriber's outbox. Live producers push synchronously and never wait; a pump writes
 * batches to the socket at the client's pace. Past `maxBufferedBytes` of unsent live text (in
 * more than one frame) the subscriber is cut off: its queue is replaced by one `dropped` frame, `onDrop` lets the owner
 * stop feeding it at once, and a stalled reader costs a bounded amount of memory and nobody else
 * anything. A replay is pulled from a Source instead of queued, so its size does not count.
 */
export class Outbox {
	readonly #max: number;
	#chunks: Chunk[] = [];
	#bytes = 0;
	/** Strings among #chunks: with none, #bytes is the batch's exact size and no chunk is looked at twice. */
	#strings = 0;
	/** Logged events among #chunks, each pinning its slab. */
	#pinned = 0;
	#pendingId: string | number | undefined;
	#ending = false;
	#dropped = false;
	#source: Source | undefined;
	#wake: (() => void) | undefined;
	/** Id of the last frame handed to the socket: where a dropped client resumes (Last-Event-ID). */
	lastSent: string | number | undefined;
	/** Called once when the subscriber is cut off. */
	onDrop: (() => void) | undefined;

	constructor(maxBufferedBytes: number) {
		this.#max = maxBufferedBytes;
	}

	get ended(): boolean {
		return this.#ending;
	}

	get dropped(): boolean {
		return this.#dropped;
	}

	/** Live text waiting for the socket. */
	get bufferedBytes(): number {
		return this.#bytes;
	}

	push(text: Chunk, id?: string | number): void {
		if (this.#ending) return;
		this.#chunks.push(text);
		this.#bytes += chunkBytes(text);
		if (typeof text === "string") this.#strings++;
		else if (!(text instanceof Uint8Array)) {
			// Its bytes are read when the batch is made: the log must not reuse them before.
			pinEvent(text);
			this.#pinned++;
		}
		if (id !== undefined) this.#pendingId = id;
		// One frame alone is never too much (a big message_end must reach a reader that keeps up).
		if (this.#bytes > this.#max && this.#chunks.length > 1) this.#drop();
		this.#notify();
	}

	/** Pull from `source` (after what is queued now) until it runs dry. */
	pull(source: Source): void {
		this.#source = source;
		this.#notify();
	}

	/** Stop after what is already queued. */
	end(): void {
		this.#ending = true;
		this.#notify();
	}

	/** Wakes a waiting pump once: the events after the first of a burst only queue. */
	#notify(): void {
		const wake = this.#wake;
		if (wake === undefined) return;
		this.#wake = undefined;
		wake();
	}

	async pump(sink: Sink): Promise<void> {
		while (!sink.aborted) {
			let text: string | Uint8Array;
			let id: string | number | undefined;
			if (this.#chunks.length > 0) {
				const first = this.#chunks[0] as Chunk;
				if (this.#chunks.length > 1)
					text =
						this.#strings === this.#chunks.length
							? this.#chunks.join("")
							: joinChunks(this.#chunks, this.#strings === 0 ? this.#bytes : undefined, sink.recycles);
				else if (typeof first === "string" || first instanceof Uint8Array) text = first;
				else text = singleFrame(first);
				id = this.#pendingId;
				this.#unpinQueued();
				this.#chunks = [];
				this.#bytes = 0;
				this.#strings = 0;
				this.#pendingId = undefined;
			} else if (this.#source && !this.#ending) {
				const next = this.#source();
				if (!next) {
					this.#source = undefined;
					continue;
				}
				({ text, lastId: id } = next);
				if (text.length === 0) continue;
			} else if (this.#ending) {
				return;
			} else {
				await new Promise<void>((resolve) => {
					this.#wake = resolve;
				});
				// Then to the end of this turn of the event loop: what the other reads of this turn bring
				// joins the batch (a busy pi's pipe is read several times a turn), so a flood takes half
				// the socket writes; an event alone goes out in the same turn as before.
				await new Promise((resolve) => setImmediate(resolve));
				continue;
			}
			if (id !== undefined) this.lastSent = id;
			await sink.write(text);
		}
		// The client is gone: what is still queued is never read.
		this.#unpinQueued();
		this.#chunks = [];
	}

	/** The queued events' bytes are copied (or never will be): the log may reuse them. */
	#unpinQueued(): void {
		if (this.#pinned === 0) return;
		for (const chunk of this.#chunks)
			if (typeof chunk !== "string" && !(chunk instanceof Uint8Array)) unpinEvent(chunk);
		this.#pinned = 0;
	}

	#drop(): void {
		this.#unpinQueued();
		this.#chunks = [
			gatewayFrame("dropped", {
				reason: "slow_consumer",
				detail: `more than ${this.#max} bytes were waiting for this client; reconnect with Last-Event-ID`,
				resumeFrom: this.lastSent ?? null,
			}),
		];
		this.#bytes = 0;
		this.#strings = 1;
		this.#pendingId = undefined;
		this.#dropped = true;
		this.#ending = true;
		this.onDrop?.();
	}
}

/** The SSE bodies the server may write to Node's response itself, and how to start each. */
const takeable = new WeakMap<ReadableStream, (res: ServerResponse) => void>();

/**
 * An SSE response that pumps `out`, which the caller has already filled and subscribed (so
 * nothing falls between a command and its stream). `detach` unsubscribes; it runs once, the
 * moment the client goes, the subscriber is dropped, or the stream ends. Nothing is pumped until
 * the response is sent: by `takeOver` to Node's response, or to whoever reads the body.
 */
export function sseStream(c: Context, options: SseOptions, out: Outbox, detach: () => void): Response {
	let detached = false;
	let unwatch: (() => void) | undefined;
	const stop = () => {
		if (detached) return;
		detached = true;
		unwatch?.();
		detach();
		out.end();
	};
	let started = false;
	let finished = false;
	let current: Channel | undefined;
	// Its principal lost the right to read it (a share taken back, a key revoked): a last frame, then the end.
	unwatch = (c.get("watchStream") as AppEnv["Variables"]["watchStream"])?.((detail) => {
		if (detached) return;
		out.push(gatewayFrame("revoked", { reason: "access_revoked", detail }));
		stop();
		// A reader that takes nothing more does not hold the socket past the grace.
		setTimeout(() => {
			if (!finished) current?.destroy();
		}, options.dropGraceMs).unref();
	});
	const run = async (channel: Channel) => {
		started = true;
		current = channel;
		let cutOff: NodeJS.Timeout | undefined;
		out.onDrop = () => {
			stop();
			// A reader that takes nothing more cannot be told it was dropped; free its socket.
			cutOff = setTimeout(() => channel.destroy(), options.dropGraceMs);
			cutOff.unref();
		};
		const heartbeat = setInterval(() => out.push(": heartbeat\n\n"), options.heartbeatMs);
		heartbeat.unref();
		try {
			if (out.dropped) out.onDrop();
			await out.pump(channel);
		} finally {
			finished = true;
			clearInterval(heartbeat);
			clearTimeout(cutOff);
			stop();
			channel.close();
		}
	};
	let web: WebChannel | undefined;
	const body = new ReadableStream<Uint8Array>(
		{
			start(controller) {
				web = new WebChannel(controller, c.env);
			},
			pull() {
				if (!started && web) void run(web);
				else web?.pulled();
			},
			cancel() {
				web?.cancelled();
				stop();
			},
		},
		{ highWaterMark: 0 },
	);
	takeable.set(body, (res) => {
		if (started) return;
		void run(new NodeChannel(res, stop));
	});
	c.header("Transfer-Encoding", "chunked");
	c.header("Content-Type", "text/event-stream");
	// no-transform keeps proxies from re-encoding; X-Accel-Buffering: no keeps nginx from holding frames.
	c.header("Cache-Control", "no-cache, no-transform");
	c.header("Connection", "keep-alive");
	c.header("X-Accel-Buffering", "no");
	return c.newResponse(body, 200);
}

/**
 * The server's last step for every answer: an SSE stream from sseStream (its body unread, so
 * after every middleware) is written to Node's response by its pump; anything else is left to
 * @hono/node-server. Returns what @hono/node-server should do with the answer.
 */
export function takeOver(answer: Response, res: ServerResponse | undefined): Response {
	const body = answer.body;
	const start = body && res ? takeable.get(body) : undefined;
	if (!start || !res || body?.locked) return answer;
	takeable.delete(body as ReadableStream);
	const headers: Record<string, string | string[]> = {};
	answer.headers.forEach((value, name) => {
		headers[name] = value;
	});
	const cookies = answer.headers.getSetCookie();
	if (cookies.length > 0) headers["set-cookie"] = cookies;
	// The headers go out with the first batch (every stream queues its stream_open first). The web
	// body is left unread, not cancelled: cancelling it would end the stream it stands for.
	res.writeHead(answer.status, headers);
	start(res);
	return RESPONSE_ALREADY_SENT;
}
