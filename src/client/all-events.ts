/**
 * `GET /v1/events` (every session's live events) as an async iterator that survives cuts. That
 * stream is live only, so a reconnect alone would lose what happened while the client was away:
 * each frame's id is `<sessionId>:<seq>`, and the `stream_open` of the new connection lists every
 * session's last sequence number. For each session that moved on meanwhile, the iterator reads the
 * missing events from that session's own stream (`?after=` the last one it yielded, up to the
 * listed number), then goes on with the live stream, dropping what it already yielded. A session
 * created during the cut is read from its start; one deleted during the cut is lost.
 */
import { GatewayError, StreamInterruptedError } from "./errors.ts";
import type { Transport } from "./http.ts";
import { FrameTooLarge, parseSse } from "./sse.ts";
import { sleep } from "./streams.ts";
import type { StreamEvent } from "./types.ts";

export interface HubEvent {
	/** The session the event belongs to (undefined for `stream_open`, `shutdown`, `dropped`). */
	sessionId: string | undefined;
	/** Its sequence number in that session's log. */
	seq: number | undefined;
	event: StreamEvent;
}

type Open = { type: "stream_open"; sessions?: { id: string; lastEventId: number }[] };
const always = new Set(["stream_open", "gap", "dropped", "session_exit", "shutdown"]);

export class AllEventsStream implements AsyncIterable<HubEvent> {
	readonly positions = new Map<string, number>();
	reconnects = 0;
	readonly #transport: Transport;
	readonly #types: string | undefined;
	readonly #signal: AbortSignal | undefined;

	constructor(transport: Transport, types?: string, signal?: AbortSignal) {
		this.#transport = transport;
		this.#types = types;
		this.#signal = signal;
	}

	async *[Symbol.asyncIterator](): AsyncGenerator<HubEvent> {
		const wanted = this.#types ? new Set(this.#types.split(",")) : undefined;
		const keep = (event: StreamEvent) => !wanted || wanted.has(event.type) || always.has(event.type);
		let opened = false;
		let closing = false;
		let failures = 0;
		let retryMs = this.#transport.reconnect.delayMs;
		for (;;) {
			let reason = "the stream ended";
			try {
				const res = await this.#open();
				const maxFrameChars = this.#transport.maxFrameChars;
				for await (const frame of parseSse(res.body ?? new ReadableStream(), {
					onRetry: (ms) => (retryMs = ms),
					maxFrameChars,
				})) {
					failures = 0;
					const event = JSON.parse(frame.data) as StreamEvent;
					if (event.type === "stream_open") {
						if (opened) yield* this.#backfill(event as Open, keep);
						else this.#start(event as Open);
						if (!opened) yield { sessionId: undefined, seq: undefined, event };
						opened = true;
						continue;
					}
					if (event.type === "dropped") {
						reason = `dropped: ${event.reason}`;
						break;
					}
					if (event.type === "shutdown") closing = true;
					const at = frame.id ? /^(.*):(\d+)$/.exec(frame.id) : null;
					if (at?.[1] !== undefined) {
						const seq = Number(at[2]);
						if (seq <= (this.positions.get(at[1]) ?? -1)) continue;
						this.positions.set(at[1], seq);
						yield { sessionId: at[1], seq, event };
					} else yield { sessionId: undefined, seq: undefined, event };
				}
				if (closing) return;
			} catch (error) {
				if (this.#signal?.aborted) throw this.#signal.reason;
				if (error instanceof GatewayError && error.status < 500 && error.status !== 429) throw error;
				if (error instanceof FrameTooLarge) throw error;
				reason = error instanceof Error ? error.message : String(error);
				if (closing || ++failures > this.#transport.reconnect.maxAttempts) {
					throw new StreamInterruptedError("The all-sessions stream broke and could not be reopened", undefined, {
						cause: error,
					});
				}
			}
			this.#transport.reconnect.onCut?.({ after: undefined, reason });
			await sleep(retryMs, this.#signal);
			this.reconnects++;
		}
	}

	#open(): Promise<Response> {
		return this.#transport.send("GET", "/v1/events", {
			query: { types: this.#types },
			headers: { accept: "text/event-stream" },
			signal: this.#signal,
		});
	}

	#start(open: Open): void {
		for (const s of open.sessions ?? []) this.positions.set(s.id, s.lastEventId);
	}

	/** What each session logged while the stream was away, read from its own stream, in order. */
	async *#backfill(open: Open, keep: (event: StreamEvent) => boolean): AsyncGenerator<HubEvent> {
		for (const s of open.sessions ?? []) {
			const after = this.positions.get(s.id) ?? 0;
			if (after >= s.lastEventId) continue;
			// Unfiltered: the replay must reach s.lastEventId to know it is done, even if that event is filtered out.
			const res = await this.#transport.send("GET", "/v1/sessions/{id}/events", {
				path: { id: s.id },
				query: { after },
				headers: { accept: "text/event-stream" },
				signal: this.#signal,
			});
			for await (const frame of parseSse(res.body ?? new ReadableStream())) {
				if (frame.id === undefined || !/^\d+$/.test(frame.id)) continue;
				const seq = Number(frame.id);
				const event = JSON.parse(frame.data) as StreamEvent;
				if (seq > (this.positions.get(s.id) ?? -1) && seq <= s.lastEventId) {
					this.positions.set(s.id, seq);
					if (keep(event)) yield { sessionId: s.id, seq, event };
				}
				if (seq >= s.lastEventId) break;
			}
			this.positions.set(s.id, Math.max(this.positions.get(s.id) ?? 0, s.lastEventId));
		}
	}
}
