import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { LoggedEvent } from "../../sessions/events/index.ts";
import type { Session } from "../../sessions/session/index.ts";
import { ApiError } from "../transport/problem.ts";
import { followSession } from "./follow.ts";
import { Outbox, type SseOptions, sseStream } from "./sse.ts";
import { gatewayFrame } from "./sse-frames.ts";

/**
 * A retried POST of a streamed command is a resume, not a new command (issue 31 item 4).
 * Retrying SSE clients (@microsoft/fetch-event-source, eventsource-client) send the same POST
 * again after a cut, with `Last-Event-ID`; sending it to pi again would start a second run. So
 * each streamed command records the span of the log its stream covers (from just before the
 * command to the event that ended it), and a POST carrying a position gets the rest of the span
 * that position lies in, read from the log, and nothing reaches pi.
 */

/** The part of a session's log one streamed command's answer covers. */
interface Span {
	commandId: string;
	/** The stream's start: it holds the events after this. */
	after: number;
	/** The event that ended it, once it has. */
	end?: number;
	/** Which events the stream carried (the bash stream: only its command's). */
	accept?: (event: LoggedEvent) => boolean;
}

/** A span being tracked; `forget()` drops it and its log listener (a command refused before it streamed). */
export interface TrackedSpan extends Span {
	forget(): void;
}

/** Spans kept per session: a retry comes seconds after its cut, not hundreds of commands later. */
const keptSpans = 64;
const spans = new WeakMap<Session, TrackedSpan[]>();

/**
 * Records where the stream of `commandId` ends, watching the log itself, so the answer is known
 * even after the first connection has gone. Call before the command is sent; `ends` is a fresh
 * predicate fed every event from then on (session_exit always ends it).
 */
export function trackSpan(
	session: Session,
	span: Omit<Span, "end">,
	ends: (event: LoggedEvent) => boolean,
): TrackedSpan {
	const list = spans.get(session) ?? [];
	spans.set(session, list);
	const unsubscribe = session.events.subscribe((event) => {
		if (tracked.end !== undefined) return;
		if (ends(event) || event.type === "session_exit") {
			tracked.end = event.seq;
			unsubscribe();
		}
	});
	const tracked: TrackedSpan = {
		...span,
		forget() {
			unsubscribe();
			const at = list.indexOf(tracked);
			if (at !== -1) list.splice(at, 1);
		},
	};
	list.push(tracked);
	// The oldest span goes, and its listener with it (a run that never ended must not hold one forever).
	if (list.length > keptSpans) list.shift()?.forget();
	if (!session.isAlive) {
		tracked.end = session.events.lastSeq;
		unsubscribe();
	}
	return tracked;
}

/** The position a POST resumes after: `Last-Event-ID` (wins) or `?after=`; undefined for a new command. */
export function resumePosition(c: Context): number | undefined {
	const raw = c.req.header("last-event-id") ?? c.req.query("after");
	if (raw === undefined) return undefined;
	if (!/^\d+$/.test(raw))
		throw new ApiError(400, "invalid_position", "Last-Event-ID (or after) must be an event id: a whole number");
	return Number(raw);
}

/** The header and query a resume is asked with, for the streamed routes' documentation. */
export const ResumeHeader = z.object({
	"last-event-id": z.string().regex(/^\d+$/).optional().openapi({
		description:
			"A resume, not a new command: the answer is `text/event-stream` (whatever `Accept` says), the rest of the stream after this event id to the end of the run (or command) it belongs to, and nothing is sent to pi; 204 when that event ended it (nothing left: stop retrying). Retrying SSE clients send it on their own after a cut. With `Idempotency-Key` it is 400",
		example: "57",
	}),
});

export const resumeAfter = z.coerce.number().int().min(0).optional().openapi({
	type: "integer",
	minimum: 0,
	description: "The same as `Last-Event-ID` (which wins when both are sent): resume after this event id",
	example: 57,
});

/** Where a position's span ends, and which of its events the stream carries; undefined when it has ended. */
function spanOf(session: Session, after: number): Span | undefined {
	const list = spans.get(session) ?? [];
	for (let i = list.length - 1; i >= 0; i--) {
		const span = list[i] as TrackedSpan;
		if (span.after < after && (span.end === undefined || after <= span.end)) return span;
	}
	return undefined;
}

const runEnds = new Set(["agent_settled", "run_lost", "session_exit"]);

/**
 * Without a recorded span (another node or an earlier gateway streamed it, or the position came
 * from the session's GET stream), the log decides: the run ends at its next `agent_settled` (or
 * `run_lost`, `session_exit`); a position that is itself a run's end, or an idle session with no
 * end after it, has nothing left.
 */
function spanFromLog(session: Session, after: number): Span | undefined {
	const at = session.events.since(after - 1, 1).events[0];
	if (at?.seq === after && runEnds.has(at.type)) return undefined;
	const end = session.events.since(after).events.find((event) => runEnds.has(event.type));
	if (end) return { commandId: "", after, end: end.seq };
	if (!session.isRunning && session.currentRunId === undefined) return undefined;
	return trackSpan(session, { commandId: session.currentRunId ?? "", after }, (event) => runEnds.has(event.type));
}

/**
 * The answer to a resumed POST: the stream after `after` to the end of its span, or 204 when
 * nothing is left (the EventSource rule that tells a client to stop reconnecting). Events older
 * than the log get a `gap` frame first, as the GET stream does.
 */
export function resumeStream(c: Context, sse: SseOptions, session: Session, after: number): Response {
	const last = session.events.lastSeq;
	if (after > last)
		throw new ApiError(
			400,
			"position_out_of_range",
			`Position ${after} is past the end of session ${session.id}'s log (its last event is ${last})`,
		);
	const span = spanOf(session, after) ?? spanFromLog(session, after);
	if (!span || (span.end !== undefined && after >= span.end)) return c.body(null, 204);
	const out = new Outbox(sse.maxBufferedBytes);
	out.push(
		gatewayFrame("stream_open", { sessionId: session.id, runId: span.commandId || undefined, after, resumed: true }),
	);
	const until = (event: LoggedEvent) => span.end !== undefined && event.seq >= span.end;
	return sseStream(c, sse, out, followSession(session, out, { after, accept: span.accept, until }));
}
