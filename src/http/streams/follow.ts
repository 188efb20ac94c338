import type { LoggedEvent } from "../../sessions/events/index.ts";
import type { SessionRegistry } from "../../sessions/registry/index.ts";
import type { Session } from "../../sessions/session/index.ts";
import type { Outbox } from "./sse.ts";
import { frame, frameBytes, gatewayFrame } from "./sse-frames.ts";

/** Events per replay batch: big enough to fill a socket write, small enough to keep the loop responsive. */
const REPLAY_BATCH = 256;

export interface FollowOptions {
	/** Replay the log after this sequence number, then go live. */
	after: number;
	/** Which events reach the client (`session_exit` and `run_lost` always do: a run or the stream ends with them). */
	accept?: (event: LoggedEvent) => boolean;
	/** The stream ends after the first event for which this is true. */
	until?: (event: LoggedEvent) => boolean;
}

export function typeFilter(types: string | undefined): ((event: LoggedEvent) => boolean) | undefined {
	if (!types) return undefined;
	const wanted = new Set(types.split(","));
	return (event) => wanted.has(event.type);
}

/**
 * Feeds one session's events into `out` so that the client sees each event after `after`
 * exactly once and in order: first a replay pulled from the log at the socket's pace (a `gap`
 * frame when the log no longer reaches back that far), then live events pushed as they are
 * appended. The subscription is made here, synchronously, before anything else can append.
 * The stream ends after `session_exit` or `until`. Returns the idempotent unsubscribe.
 */
export function followSession(session: Session, out: Outbox, { after, accept, until }: FollowOptions): () => void {
	let cursor = after;
	let live = after >= session.events.lastSeq;
	let done = false;
	out.lastSent ??= after;

	/** Whether `event` reaches the client; finishes the stream when it is the last one. */
	const take = (event: LoggedEvent): boolean => {
		cursor = event.seq;
		const exit = event.type === "session_exit";
		const include = exit || !accept || event.type === "run_lost" || accept(event);
		if (exit || until?.(event)) done = true;
		return include;
	};

	const unsubscribe = session.events.subscribe((event) => {
		// Before going live the replay pulls this event from the log; seq guards against doubles.
		if (!live || done || event.seq <= cursor) return;
		if (take(event)) out.push(frameBytes(event), event.seq);
		if (done) finish();
	});
	session.sseSubscribers++;
	let subscribed = true;
	const detach = () => {
		if (!subscribed) return;
		subscribed = false;
		unsubscribe();
		session.sseSubscribers--;
	};
	const finish = () => {
		done = true;
		detach();
		out.end();
	};

	if (live) {
		if (!session.isAlive) finish();
		return detach;
	}
	out.pull(() => {
		if (done) return undefined;
		const { events, gap } = session.events.since(cursor, REPLAY_BATCH);
		const frames: Uint8Array[] = [];
		if (gap) {
			frames.push(Buffer.from(gatewayFrame("gap", { sessionId: session.id, ...gap }, gap.firstAvailable - 1)));
			cursor = gap.firstAvailable - 1;
		}
		let lastId: number | undefined = gap ? cursor : undefined;
		for (const event of events) {
			if (take(event)) {
				frames.push(frame(event));
				lastId = event.seq;
			}
			if (done) break;
		}
		if (done) finish();
		else if (events.length === 0 && !gap) {
			// Caught up: from here on the listener pushes, in the same tick as the check.
			live = true;
			if (!session.isAlive) finish();
			return undefined;
		}
		return { text: Buffer.concat(frames), lastId };
	});
	return detach;
}

/**
 * Feeds every session's live events into `out`, each frame's id naming its session
 * (`<sessionId>:<seq>`). When the gateway shuts down, says so and ends once every session is gone.
 */
export function followAll(
	registry: SessionRegistry,
	out: Outbox,
	accept: ((event: LoggedEvent) => boolean) | undefined,
	/** Which sessions the subscriber may see (its principal's); every one when absent. */
	visible?: (sessionId: string) => boolean,
): () => void {
	let announced = false;
	const unsubscribe = registry.subscribeAll((sessionId, event) => {
		if (registry.closing && !announced) {
			announced = true;
			out.push(gatewayFrame("shutdown", { reason: "the gateway is shutting down" }));
		}
		if ((!visible || visible(sessionId)) && (!accept || accept(event))) {
			const id = `${sessionId}:${event.seq}`;
			out.push(frame(event, id), id);
		}
		if (registry.closing && event.type === "session_exit" && registry.list().every((s) => !s.isAlive)) {
			unsubscribe();
			out.end();
		}
	});
	return unsubscribe;
}
