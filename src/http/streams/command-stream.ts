import type { Context } from "hono";
import type { PiCommand } from "../../pi/protocol.ts";
import type { LoggedEvent } from "../../sessions/events/index.ts";
import { responseId } from "../../sessions/runs/index.ts";
import type { Session } from "../../sessions/session/index.ts";
import { GatewayError } from "../../shared/errors.ts";
import { unwrap } from "../transport/pi-result.ts";
import { ApiError } from "../transport/problem.ts";
import { followSession } from "./follow.ts";
import { trackSpan } from "./resume.ts";
import { Outbox, type SseOptions, sseStream } from "./sse.ts";
import { gatewayFrame } from "./sse-frames.ts";

export interface CommandStreamPlan {
	session: Session;
	command: PiCommand & { id: string };
	/** Extra fields of the `stream_open` frame (the run or command id). */
	open: Record<string, unknown>;
	/** Which events reach the client (default: all of the session's). */
	accept?: (event: LoggedEvent) => boolean;
	/** The stream ends after this event. */
	until: (event: LoggedEvent) => boolean;
	/**
	 * Resolves when the answer must become a stream before pi's response: pi holds the response
	 * while a dialog waits for an answer, and a bash command answers only once it has finished.
	 */
	commitEarly: Promise<void>;
	/** A fresh copy of `until` for the span a resumed POST replays (resume.ts). */
	spanEnds: (event: LoggedEvent) => boolean;
}

/** Accept: text/event-stream (an explicit SSE request; `*\/*` does not count). */
export function wantsStream(c: Context): boolean {
	return (c.req.header("accept") ?? "").includes("text/event-stream");
}

/** A next-macrotask promise: by then a command that fails at once (queue full, pi gone) has failed. */
export const nextTick = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Subscribes first, then sends the command, so the stream holds everything from the moment pi
 * sees it. While pi has not answered, a refusal is still an HTTP error (nothing streamed); once
 * the stream has begun, pi's answer arrives as its `response` frame and a gateway failure (504,
 * 502) as a final `error` frame.
 */
export async function streamCommand(c: Context, sse: SseOptions, plan: CommandStreamPlan): Promise<Response> {
	const { session, command } = plan;
	const startSeq = session.events.lastSeq;
	const out = new Outbox(sse.maxBufferedBytes);
	out.push(gatewayFrame("stream_open", { sessionId: session.id, ...plan.open, after: startSeq }));
	const detach = followSession(session, out, { after: startSeq, accept: plan.accept, until: plan.until });
	const span = trackSpan(session, { commandId: command.id, after: startSeq, accept: plan.accept }, plan.spanEnds);
	const request = session.request(command);
	const first = await Promise.race([
		request.then(
			(response) => ({ response }),
			(error: unknown) => ({ error }),
		),
		plan.commitEarly.then(() => undefined),
	]);
	if (first) {
		try {
			if ("error" in first) throw first.error;
			unwrap(first.response);
		} catch (error) {
			detach();
			// Refused before any stream began: nothing to resume, and no answer will ever end the span.
			span.forget();
			throw error;
		}
	} else {
		request.catch((error: unknown) => {
			const problem = error instanceof GatewayError ? error : new ApiError(500, "internal_error", String(error));
			out.push(gatewayFrame("error", { status: problem.status, code: problem.code, detail: problem.message }));
			out.end();
		});
	}
	return sseStream(c, sse, out, detach);
}

/**
 * A command that is not a run but streams events of its own (`bash` → `bash_execution_update`,
 * which pi tags with the command's id): those events, then pi's response to it, then the end.
 */
export function streamOwnEvents(
	c: Context,
	sse: SseOptions,
	session: Session,
	type: string,
	fields: Record<string, unknown>,
	eventType: string,
): Promise<Response> {
	const id = session.nextCommandId();
	// pi writes `"id":"<id>"` unescaped only as a key of the event itself: quotes inside strings are escaped.
	const tag = `"id":"${id}"`;
	const ours = (event: LoggedEvent) =>
		(event.type === eventType && event.data.includes(tag)) || (event.type === "response" && responseId(event) === id);
	const answered = (event: LoggedEvent) => event.type === "response" && responseId(event) === id;
	return streamCommand(c, sse, {
		session,
		command: { ...fields, type, id },
		open: { commandId: id },
		accept: ours,
		until: answered,
		commitEarly: nextTick(),
		spanEnds: answered,
	});
}
