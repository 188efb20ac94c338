import { type Followed, type FollowOptions, follow, type LoggedEvent } from "../../sessions/events/index.ts";
import type { SessionRegistry } from "../../sessions/registry/index.ts";
import type { Outbox } from "./sse.ts";
import { frame, frameBytes, gatewayFrame } from "./sse-frames.ts";

/** Events per replay batch: big enough to fill a socket write, small enough to keep the loop responsive. */
const REPLAY_BATCH = 256;

export type { FollowOptions };

export function typeFilter(types: string | undefined): ((event: LoggedEvent) => boolean) | undefined {
	if (!types) return undefined;
	const wanted = new Set(types.split(","));
	return (event) => wanted.has(event.type);
}

/**
 * Feeds one session's events into `out` as frames (the events room's follow decides which and
 * when): a replay pulled at the socket's pace, a `gap` frame where the log no longer reaches back,
 * then live events. Returns the idempotent release; the stream ends after `session_exit` or `until`.
 */
export function followSession(session: Followed & { readonly id: string }, out: Outbox, options: FollowOptions) {
	out.lastSent ??= options.after;
	const following = follow(session, options, {
		event: (event) => out.push(frameBytes(event), event.seq),
		end: () => out.end(),
	});
	if (following.live) return following.release;
	out.pull(() => {
		const batch = following.next(REPLAY_BATCH);
		if (!batch) return undefined;
		const frames: Uint8Array[] = [];
		let lastId: number | undefined;
		if (batch.gap) {
			lastId = batch.gap.firstAvailable - 1;
			frames.push(Buffer.from(gatewayFrame("gap", { sessionId: session.id, ...batch.gap }, lastId)));
		}
		for (const event of batch.events) {
			frames.push(frame(event));
			lastId = event.seq;
		}
		return { text: Buffer.concat(frames), lastId };
	});
	return following.release;
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
