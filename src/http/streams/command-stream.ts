import type { Context } from "hono";
import { type CommandStreamSink, streamCommandEvents } from "../../sessions/runs/index.ts";
import type { Session } from "../../sessions/session/index.ts";
import { Outbox, type SseOptions, sseStream } from "./sse.ts";
import { frameBytes, gatewayFrame } from "./sse-frames.ts";

/** Accept: text/event-stream (an explicit SSE request; `*\/*` does not count). */
export function wantsStream(c: Context): boolean {
	return (c.req.header("accept") ?? "").includes("text/event-stream");
}

/** The `stream_open` field that names the command: a run's id, or a command's own. */
export type OpenAs = "runId" | "commandId";

/**
 * A streamed command's answer as SSE: `stream_open`, the events the run service hands over, then
 * the end; a gateway failure once the stream has begun (504, 502) is a final `error` frame. While
 * pi has not answered, a refusal rejects `start` and is an HTTP error: nothing streamed.
 */
export async function commandSse(
	c: Context,
	sse: SseOptions,
	session: Session,
	openAs: OpenAs,
	start: (sink: CommandStreamSink) => Promise<() => void>,
): Promise<Response> {
	const out = new Outbox(sse.maxBufferedBytes);
	const release = await start({
		open(after, commandId) {
			out.push(gatewayFrame("stream_open", { sessionId: session.id, [openAs]: commandId, after }));
			out.lastSent ??= after;
		},
		event: (event) => out.push(frameBytes(event), event.seq),
		end: () => out.end(),
		failed(problem) {
			out.push(gatewayFrame("error", { status: problem.status, code: problem.code, detail: problem.message }));
			out.end();
		},
	});
	return sseStream(c, sse, out, release);
}

/**
 * A command that is not a run but streams events of its own (`bash` → `bash_execution_update`):
 * those events, then pi's response to it, then the end (the run service's streamCommandEvents).
 */
export function streamOwnEvents(
	c: Context,
	sse: SseOptions,
	session: Session,
	type: string,
	fields: Record<string, unknown>,
	eventType: string,
): Promise<Response> {
	return commandSse(c, sse, session, "commandId", (sink) =>
		streamCommandEvents(session, type, fields, eventType, sink),
	);
}
