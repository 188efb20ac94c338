import type { Context } from "hono";
import { cancelRun, type PreparedRun, prepareRun, type RunCommand } from "../../../sessions/runs/index.ts";
import type { Session } from "../../../sessions/session/index.ts";
import { commandSse, wantsStream } from "../../streams/command-stream.ts";
import { sseOptions } from "../../streams/options.ts";
import { resumePosition, resumeStream } from "../../streams/resume.ts";
import type { SseOptions } from "../../streams/sse.ts";
import { createRouter } from "../../transport/openapi.ts";
import { requestedWait } from "../../transport/wait.ts";
import type { Deps } from "../deps.ts";
import { cancelRunRoute } from "./cancel.routes.ts";
import { runResponse } from "./run-answers.ts";
import { followUp, prompt, steer } from "./runs.routes.ts";

/** Accept: text/event-stream — the run's events from this command to the run's end. */
export const streamRun = (c: Context, sse: SseOptions, session: Session, run: PreparedRun): Promise<Response> =>
	commandSse(c, sse, session, "runId", (sink) => run.stream(sink));

/** `Prefer: cancel-on-disconnect` beside `wait`: the caller that stops waiting wants the run stopped too. */
const cancelsOnDisconnect = (c: Context): boolean =>
	(c.req.header("prefer") ?? "")
		.split(",")
		.some((p) => p.split(";")[0]?.trim().toLowerCase() === "cancel-on-disconnect");

/**
 * Cancels the run (cancelRun: aborted, or taken out of the queue) when the waiting caller's
 * connection closes before its answer was sent; returns what stops watching.
 */
function cancelOnDisconnect(c: Context, session: Session, runId: string): () => void {
	const signal = c.req.raw.signal;
	const cancel = () => {
		cancelRun(session, runId).catch(() => {});
	};
	signal.addEventListener("abort", cancel, { once: true });
	return () => signal.removeEventListener("abort", cancel);
}

export function runsRouter({ registry, config }: Deps) {
	const sse = sseOptions(config);
	/**
	 * One run command: streamed (Accept: text/event-stream), waited for (Prefer: wait: 200 with the
	 * result, or 202 at the deadline or when a dialog holds it) or accepted (202). The run service
	 * decides what became of it; this maps its answer.
	 */
	const run = (c: Context, type: RunCommand["type"], body: Record<string, unknown>): Promise<Response> => {
		const session = registry.get(c.req.param("id") as string);
		// A retried POST (Last-Event-ID) resumes the stream it lost: nothing reaches pi.
		const resumeAt = resumePosition(c);
		if (resumeAt !== undefined) return Promise.resolve(resumeStream(c, sse, session, resumeAt));
		const prepared = prepareRun(session, type, body);
		if (wantsStream(c)) return streamRun(c, sse, session, prepared);
		const wait = requestedWait(c.req.header("prefer"), c.req.query("wait"), config.waitTimeoutMs);
		if (wait) {
			const release = cancelsOnDisconnect(c) ? cancelOnDisconnect(c, session, prepared.command.id) : () => {};
			return prepared
				.wait(wait.ms, c.req.raw.signal)
				.then((answer) => runResponse(c, session, answer, wait))
				.finally(release);
		}
		return prepared.accept().then((answer) => runResponse(c, session, answer));
	};
	// The input is typed by the route; the answer is one of three (SSE, 200 result, 202 accepted)
	// built as plain Responses, which hono's typed responses cannot name.
	return createRouter()
		.openapi(prompt, (c) => run(c, "prompt", c.req.valid("json")) as never)
		.openapi(steer, (c) => run(c, "steer", c.req.valid("json")) as never)
		.openapi(followUp, (c) => run(c, "follow_up", c.req.valid("json")) as never)
		.openapi(cancelRunRoute, async (c) => {
			const { id, runId } = c.req.valid("param");
			return c.json(await cancelRun(registry.get(id), runId), 200);
		});
}
