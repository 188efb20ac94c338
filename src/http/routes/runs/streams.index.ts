import type { Context } from "hono";
import { prepareRun } from "../../../sessions/runs/index.ts";
import { sseOptions } from "../../streams/options.ts";
import { resumePosition, resumeStream } from "../../streams/resume.ts";
import { createRouter } from "../../transport/openapi.ts";
import type { Deps } from "../deps.ts";
import { streamRun } from "./runs.index.ts";
import { followUpStream, promptStream, steerStream } from "./streams.routes.ts";

/** `POST …/prompt/stream` and friends: the same stream as the plain path with Accept: text/event-stream. */
export function runStreamsRouter({ registry, config }: Deps) {
	const sse = sseOptions(config);
	const run = (c: Context, type: string, body: unknown) => {
		const session = registry.get(c.req.param("id") as string);
		const resumeAt = resumePosition(c);
		if (resumeAt !== undefined) return Promise.resolve(resumeStream(c, sse, session, resumeAt));
		return streamRun(c, sse, session, prepareRun(session, type, body));
	};
	return createRouter()
		.openapi(promptStream, (c) => run(c, "prompt", c.req.valid("json") as Record<string, unknown>))
		.openapi(steerStream, (c) => run(c, "steer", c.req.valid("json") as Record<string, unknown>))
		.openapi(followUpStream, (c) => run(c, "follow_up", c.req.valid("json") as Record<string, unknown>));
}
