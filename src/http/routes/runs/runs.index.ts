import type { Context } from "hono";
import type { LoggedEvent } from "../../../sessions/event-log.ts";
import { RunCollector, responseIndex, waitForRun } from "../../../sessions/run-result.ts";
import type { Session } from "../../../sessions/session.ts";
import type { Deps } from "../../deps.ts";
import { createRouter } from "../../openapi.ts";
import { unwrap } from "../../pi-result.ts";
import { gatewayFrame, sseStream } from "../../sse.ts";
import { followSession } from "../events/events.index.ts";
import { followUp, prompt, steer } from "./runs.routes.ts";

type Disposition = "started" | "queued" | "handled";

/** Wait mode in seconds, from `Prefer: wait[=N]` or `?wait=true|N`; undefined when not asked. */
export function requestedWait(
	prefer: string | undefined,
	query: string | undefined,
	maxMs: number,
): number | undefined {
	const fromPrefer = prefer
		?.split(",")
		.map((p) => p.trim())
		.find((p) => p === "wait" || p.startsWith("wait="));
	const raw = fromPrefer !== undefined ? (fromPrefer.split("=")[1] ?? "true") : query;
	if (raw === undefined || raw === "false") return undefined;
	const seconds = raw === "true" ? Number.POSITIVE_INFINITY : Number(raw);
	return Math.min(seconds * 1000, maxMs);
}

function wantsStream(c: Context): boolean {
	return (c.req.header("accept") ?? "").includes("text/event-stream");
}

export function runsRouter({ registry, config }: Deps) {
	const sse = { heartbeatMs: config.sseHeartbeatMs, maxBufferedBytes: config.sseMaxBufferedBytes };

	const handle = async (
		c: Context,
		session: Session,
		type: string,
		fields: Record<string, unknown>,
		waitMs: number | undefined,
	) => {
		const runId = session.nextCommandId();
		const startSeq = session.log.lastSeq;
		const eventsUrl = `/v1/sessions/${session.id}/events?after=${startSeq}`;
		// Sent before anything is streamed: a refusal is an HTTP error, not a stream that ends at once.
		const data = unwrap(await session.request({ type, id: runId, ...fields })) as { disposition?: Disposition };
		const disposition = data?.disposition ?? "queued";
		const endsWithRun = disposition !== "handled";
		if (wantsStream(c)) {
			return sseStream(c, sse, (out) => {
				out.push(gatewayFrame("stream_open", { sessionId: session.id, runId, after: startSeq, disposition }, startSeq));
				let seenResponse = false;
				const until = (event: LoggedEvent) => {
					if (!seenResponse) {
						seenResponse = event.type === "response" && responseIndex([event], runId) === 0;
						return seenResponse && !endsWithRun;
					}
					return event.type === "agent_settled";
				};
				return followSession(session, out, startSeq, undefined, until);
			});
		}
		if (waitMs === undefined) return c.json({ runId, disposition, eventsUrl }, 202);
		const result = endsWithRun
			? await waitForRun(session, runId, startSeq, waitMs, c.req.raw.signal)
			: new RunCollector(runId, session.log.lastSeq).result();
		if (!result) return c.json({ runId, disposition, eventsUrl }, 202);
		c.header("Preference-Applied", "wait");
		return c.json({ ...result, disposition }, 200);
	};

	const router = createRouter();
	for (const [route, type] of [
		[prompt, "prompt"],
		[steer, "steer"],
		[followUp, "follow_up"],
	] as const) {
		router.openapi(route, (async (c: Context) => {
			const session = registry.get(c.req.param("id") as string);
			const body = (c.req as unknown as { valid(t: "json"): Record<string, unknown> }).valid("json");
			const waitMs = requestedWait(c.req.header("prefer"), c.req.query("wait"), config.waitTimeoutMs);
			return handle(c, session, type, body, waitMs);
		}) as never);
	}
	return router;
}
