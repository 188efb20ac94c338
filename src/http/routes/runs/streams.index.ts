import type { Context } from "hono";
import type { Deps } from "../../deps.ts";
import { createRouter } from "../../openapi.ts";
import { sseOptions } from "../../streams/options.ts";
import { streamRun } from "./runs.index.ts";
import { followUpStream, promptStream, steerStream } from "./streams.routes.ts";

/** `POST …/prompt/stream` and friends: the same stream as the plain path with Accept: text/event-stream. */
export function runStreamsRouter({ registry, config }: Deps) {
	const sse = sseOptions(config);
	const router = createRouter();
	for (const [route, type] of [
		[promptStream, "prompt"],
		[steerStream, "steer"],
		[followUpStream, "follow_up"],
	] as const) {
		router.openapi(route, (async (c: Context) => {
			const session = registry.get(c.req.param("id") as string);
			const body = (c.req as unknown as { valid(t: "json"): Record<string, unknown> }).valid("json");
			return streamRun(c, sse, session, { type, ...body, id: session.nextCommandId() });
		}) as never);
	}
	return router;
}
