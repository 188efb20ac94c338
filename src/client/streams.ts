/**
 * One session's events as an async iterator that survives broken connections. Every frame of a
 * session's log carries its sequence number as `id:`; after a cut the iterator reconnects to
 * `GET /v1/sessions/{id}/events` with `Last-Event-ID` set to the last one it yielded, so the
 * gateway replays exactly what came after: nothing lost, and a frame at or below that number is
 * dropped should one come twice. A `dropped` frame (this client fell too far behind) is such a
 * cut, resumed from its `resumeFrom`; a `gap` frame (the log no longer reaches back) is yielded so
 * the caller knows what was lost. The `stream_open` of a reconnect is not yielded: to the caller
 * it is one stream. Commands that stream (prompt, bash) are POSTs, resumed by the same POST with
 * `Last-Event-ID`: the gateway answers with the rest of that run and never sends it to pi twice
 * (204 when nothing is left). A run that died with its gateway (an unclean stop) cannot end there:
 * its resumed stream gets a `gap`, then `run_lost`, and the iteration ends with a RunLostError. A
 * run stream that ends before its run did ends with a StreamInterruptedError, never silently.
 */
import { GatewayError, RunLostError, StreamInterruptedError } from "./errors.ts";
import type { Transport } from "./http.ts";
import { FrameTooLarge, parseSse } from "./sse.ts";
import type { StreamEvent } from "./types.ts";

export interface StreamPlan {
	sessionId: string;
	/** The first connection (a POST for commands, a GET for the event stream). */
	open(signal: AbortSignal | undefined): Promise<Response>;
	/** Event types to ask for on a resumed stream (`?types=`), when only some matter. */
	types?: string;
	/** Whether an event reaches the caller (default: all). */
	accept?(event: StreamEvent): boolean;
	/** The stream's last event, after which iteration ends. */
	ends(event: StreamEvent): boolean;
	/** A body that ends without an error is the end (POST streams: the gateway ended it on purpose). */
	cleanEndIsFinal: boolean;
	/** An event that ends the iteration with an error instead of being yielded (a run stream's `run_lost`). */
	fails?(event: StreamEvent): Error | undefined;
	/**
	 * How a cut is resumed when not by `GET …/events`: the same POST with `Last-Event-ID`, which the
	 * gateway answers with the rest of that run and never sends to pi again (204: nothing is left).
	 */
	resume?(after: number, signal: AbortSignal | undefined): Promise<Response>;
}

type Frame = StreamEvent & { [key: string]: unknown };

export class EventStream implements AsyncIterable<StreamEvent> {
	/** The sequence number of the last event yielded (or the position the stream joined at). */
	lastEventId: number | undefined;
	/** How many times the stream reconnected. */
	reconnects = 0;
	readonly #transport: Transport;
	readonly #plan: StreamPlan;
	readonly #signal: AbortSignal | undefined;
	#used = false;

	constructor(transport: Transport, plan: StreamPlan, signal?: AbortSignal) {
		this.#transport = transport;
		this.#plan = plan;
		this.#signal = signal;
	}

	async *[Symbol.asyncIterator](): AsyncGenerator<StreamEvent> {
		if (this.#used) throw new TypeError("An EventStream can be iterated once");
		this.#used = true;
		const plan = this.#plan;
		let res = await plan.open(this.#signal);
		let retryMs = this.#transport.reconnect.delayMs;
		const maxFrameChars = this.#transport.maxFrameChars;
		let opened = false;
		for (;;) {
			let cleanEnd = false;
			let resumeFrom: number | undefined;
			let failure: Error | undefined;
			let reason = "the stream ended";
			try {
				const frames = parseSse(res.body ?? new ReadableStream(), { onRetry: (ms) => (retryMs = ms), maxFrameChars });
				for await (const frame of frames) {
					const event = parse(frame.data);
					if (!event) continue;
					if (frame.id !== undefined && /^\d+$/.test(frame.id)) {
						const seq = Number(frame.id);
						if (this.lastEventId !== undefined && seq <= this.lastEventId) continue;
						this.lastEventId = seq;
					}
					if (event.type === "stream_open") {
						if (this.lastEventId === undefined && typeof event.after === "number") this.lastEventId = event.after;
						if (opened) continue;
						opened = true;
					} else if (event.type === "dropped") {
						const from = Number(event.resumeFrom);
						resumeFrom = Number.isFinite(from) && event.resumeFrom !== null ? from : this.lastEventId;
						reason = `dropped: ${String(event.reason)}`;
						break;
					}
					if (plan.accept && !plan.accept(event) && event.type !== "stream_open" && event.type !== "gap") continue;
					failure = plan.fails?.(event);
					if (failure) break;
					yield event;
					if (plan.ends(event)) return;
				}
				cleanEnd = resumeFrom === undefined;
			} catch (error) {
				if (this.#signal?.aborted) throw this.#signal.reason;
				// A frame past the bound would come again on a reconnect: the stream fails with it.
				if (!(error instanceof Error) || error instanceof FrameTooLarge) throw error;
				reason = error.message;
			}
			if (failure) throw failure;
			// The server closed the stream before the event that ends it (a revoked share, a gateway going
			// down): never a silent end the caller could take for the end of the run.
			if (cleanEnd && plan.cleanEndIsFinal)
				throw new StreamInterruptedError(
					"The stream ended before the run did",
					this.lastEventId === undefined ? undefined : String(this.lastEventId),
				);
			if (resumeFrom !== undefined) this.lastEventId = resumeFrom;
			this.#transport.reconnect.onCut?.({ after: this.lastEventId, reason });
			const next = await this.#reconnect(retryMs);
			if (next === undefined) return;
			res = next;
		}
	}

	/**
	 * Reopens the stream after the last event, retrying with the same delay until the limit;
	 * undefined when the gateway says nothing is left (204).
	 */
	async #reconnect(delayMs: number): Promise<Response | undefined> {
		const after = this.lastEventId;
		if (after === undefined) {
			throw new StreamInterruptedError("The stream broke before it said where it joined; cannot resume", undefined);
		}
		let lastError: unknown;
		for (let attempt = 1; attempt <= this.#transport.reconnect.maxAttempts; attempt++) {
			await sleep(delayMs, this.#signal);
			try {
				const res = this.#plan.resume
					? await this.#plan.resume(after, this.#signal)
					: await this.#transport.send("GET", "/v1/sessions/{id}/events", {
							path: { id: this.#plan.sessionId },
							query: { types: this.#plan.types },
							headers: { accept: "text/event-stream", "last-event-id": String(after) },
							signal: this.#signal,
						});
				this.reconnects++;
				if (res.status === 204) return undefined;
				return res;
			} catch (error) {
				if (this.#signal?.aborted) throw this.#signal.reason;
				// A 4xx other than 429 will not change by retrying (the session is gone, the token revoked).
				if (error instanceof GatewayError && error.status < 500 && error.status !== 429) throw error;
				if (error instanceof GatewayError && error.retryAfter) delayMs = error.retryAfter * 1000;
				lastError = error;
			}
		}
		throw new StreamInterruptedError(`Could not reconnect after event ${after}`, String(after), {
			cause: lastError,
		});
	}
}

function parse(data: string): Frame | undefined {
	try {
		const value = JSON.parse(data) as Frame;
		return value && typeof value === "object" && typeof value.type === "string" ? value : undefined;
	} catch {
		return undefined;
	}
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
	return new Promise((resolve, reject) => {
		if (signal?.aborted) return reject(signal.reason);
		const done = () => {
			signal?.removeEventListener("abort", abort);
			resolve();
		};
		const timer = setTimeout(done, ms);
		const abort = () => {
			clearTimeout(timer);
			reject(signal?.reason);
		};
		signal?.addEventListener("abort", abort, { once: true });
	});
}

/** The id a command stream's `stream_open` names (`runId` for runs, `commandId` for bash). */
function openedId(e: Frame, key: "runId" | "commandId"): string | undefined {
	return e.type === "stream_open" && typeof e[key] === "string" ? (e[key] as string) : undefined;
}

/** Where a prompt/steer/follow-up stream ends: pi refused it or handled it, else at the run's `agent_settled`. */
export function runEnd(): (event: StreamEvent) => boolean {
	let runId: string | undefined;
	let responded = false;
	return (event) => {
		const e = event as Frame;
		runId ??= openedId(e, "runId");
		if (e.type === "session_exit" || e.type === "error") return true;
		if (!responded) {
			if (e.type !== "response" || e.id !== runId) return false;
			responded = true;
			const data = e.data as { disposition?: string } | undefined;
			return e.success !== true || data?.disposition === "handled";
		}
		return e.type === "agent_settled";
	};
}

/**
 * A run stream's `run_lost`: the run died with its gateway or node (an unclean stop) and will
 * never settle, so the iteration ends with a RunLostError rather than waiting for its end.
 */
export function runLost(event: StreamEvent): Error | undefined {
	const e = event as Frame;
	if (e.type !== "run_lost") return undefined;
	return new RunLostError(String(e.sessionId), String(e.runId), String(e.reason ?? "the run was lost"));
}

/** The events of one streamed bash command: its output updates and pi's response to it. */
export function commandEvents() {
	let commandId: string | undefined;
	const ours = (event: StreamEvent) => {
		const e = event as Frame;
		if (e.type === "session_exit" || e.type === "error") return true;
		return (e.type === "bash_execution_update" || e.type === "response") && e.id === commandId;
	};
	return {
		types: "bash_execution_update,response",
		accept: ours,
		ends: (event: StreamEvent) => {
			commandId ??= openedId(event as Frame, "commandId");
			return ours(event) && event.type !== "bash_execution_update";
		},
	};
}
