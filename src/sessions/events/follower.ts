import type { EventLog, Gap, LoggedEvent } from "./event-log.ts";

/** What a follower reads: a session's log, and whether more can come (a session's pi is alive). */
export interface Followed {
	readonly events: EventLog;
	readonly isAlive: boolean;
}

export interface FollowOptions {
	/** Replay the log after this sequence number, then go live. */
	after: number;
	/** Which events reach the reader (`session_exit` and `run_lost` always do: a run or the stream ends with them). */
	accept?: (event: LoggedEvent) => boolean;
	/** The stream ends after the first event for which this is true. */
	until?: (event: LoggedEvent) => boolean;
}

/** Where a follower's events go once it is live, and its end. */
export interface FollowSink {
	event(event: LoggedEvent): void;
	end(): void;
}

/** One batch of a replay: a gap when the log no longer reaches back to the position, then events. */
export interface ReplayBatch {
	gap?: Gap;
	events: LoggedEvent[];
}

/** A reader's hold on a log: a replay to pull while it catches up, then live events pushed to its sink. */
export interface Following {
	/** True when there was nothing to replay: events are pushed from the start. */
	readonly live: boolean;
	/** The next replay batch (at most `limit` events read); undefined once caught up or ended. */
	next(limit: number): ReplayBatch | undefined;
	/** Stops following and releases its place among the log's followers; idempotent. */
	release(): void;
}

/**
 * Follows one session's log so that the reader sees each event after `after` exactly once and in
 * order: first a replay pulled at the reader's pace (`next`, a gap when the log no longer reaches
 * back that far), then live events pushed as they are appended. The subscription is made here,
 * synchronously, before anything else can append, and counts among the log's followers (a
 * session's subscriber cap) until released. It ends after `session_exit` or `until`: released,
 * then `sink.end()`.
 */
export function follow(session: Followed, { after, accept, until }: FollowOptions, sink: FollowSink): Following {
	let cursor = after;
	let live = after >= session.events.lastSeq;
	let done = false;

	/** Whether `event` reaches the reader; marks the end when it is the last one. */
	const take = (event: LoggedEvent): boolean => {
		cursor = event.seq;
		const exit = event.type === "session_exit";
		const include = exit || !accept || event.type === "run_lost" || accept(event);
		if (exit || until?.(event)) done = true;
		return include;
	};

	const release = session.events.follow((event) => {
		// Before going live the replay pulls this event from the log; seq guards against doubles.
		if (!live || done || event.seq <= cursor) return;
		if (take(event)) sink.event(event);
		if (done) finish();
	});
	const finish = () => {
		done = true;
		release();
		sink.end();
	};

	const following: Following = {
		live,
		next(limit) {
			if (done) return undefined;
			const { events, gap } = session.events.since(cursor, limit);
			if (gap) cursor = gap.firstAvailable - 1;
			const taken: LoggedEvent[] = [];
			for (const event of events) {
				if (take(event)) taken.push(event);
				if (done) break;
			}
			if (done) finish();
			else if (events.length === 0 && !gap) {
				// Caught up: from here on the listener pushes, in the same tick as the check.
				live = true;
				if (!session.isAlive) finish();
				return undefined;
			}
			return gap ? { gap, events: taken } : { events: taken };
		},
		release,
	};
	if (live && !session.isAlive) finish();
	return following;
}
