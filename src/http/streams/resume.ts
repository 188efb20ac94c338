import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { LoggedEvent } from "../../sessions/events/index.ts";
import { spanAt } from "../../sessions/runs/index.ts";
import type { Session } from "../../sessions/session/index.ts";
import { ApiError } from "../transport/problem.ts";
import { followSession } from "./follow.ts";
import { Outbox, type SseOptions, sseStream } from "./sse.ts";
import { gatewayFrame } from "./sse-frames.ts";

/**
 * A retried POST of a streamed command is a resume, not a new command (issue 31 item 4): a
 * POST carrying a position (`Last-Event-ID` or `?after=`) gets the rest of the span of the log
 * that position lies in (sessions/runs/run-spans.ts), and nothing reaches pi.
 */

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
	const span = spanAt(session, after);
	if (!span) return c.body(null, 204);
	const out = new Outbox(sse.maxBufferedBytes);
	out.push(
		gatewayFrame("stream_open", { sessionId: session.id, runId: span.commandId || undefined, after, resumed: true }),
	);
	const until = (event: LoggedEvent) => span.end !== undefined && event.seq >= span.end;
	return sseStream(c, sse, out, followSession(session, out, { after, accept: span.accept, until }));
}
