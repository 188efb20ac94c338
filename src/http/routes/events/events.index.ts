import type { LoggedEvent } from "../../../sessions/event-log.ts";
import type { Session } from "../../../sessions/session.ts";
import type { Deps } from "../../deps.ts";
import { createRouter } from "../../openapi.ts";
import { ApiError } from "../../problem.ts";
import { frame, gatewayFrame, type Outbox, sseStream } from "../../sse.ts";
import { allEvents, sessionEvents } from "./events.routes.ts";

export function typeFilter(types: string | undefined): ((type: string) => boolean) | undefined {
	if (!types) return undefined;
	const wanted = new Set(types.split(","));
	return (type) => wanted.has(type);
}

/**
 * Queues the replay after `after` and subscribes to what follows, in one synchronous step, so
 * the client sees every event once. Ends after `session_exit`, or when `until` says so.
 */
export function followSession(
	session: Session,
	out: Outbox,
	after: number,
	accept: ((type: string) => boolean) | undefined,
	until?: (event: LoggedEvent) => boolean,
): () => void {
	const replay = session.log.since(after);
	if (replay.gap)
		out.push(gatewayFrame("gap", { sessionId: session.id, ...replay.gap }, replay.gap.firstAvailable - 1));
	const deliver = (event: LoggedEvent): boolean => {
		if (!accept || accept(event.type)) out.push(frame(event), event.seq);
		if (event.type === "session_exit" || until?.(event)) {
			out.end();
			return false;
		}
		return true;
	};
	for (const event of replay.events) if (!deliver(event)) return () => {};
	if (!session.isAlive) {
		out.end();
		return () => {};
	}
	session.sseSubscribers++;
	const unsubscribe = session.log.subscribe((event) => {
		if (!deliver(event)) stop();
	});
	let stopped = false;
	const stop = () => {
		if (stopped) return;
		stopped = true;
		unsubscribe();
		session.sseSubscribers--;
	};
	return stop;
}

export function eventsRouter({ registry, config }: Deps) {
	const sse = { heartbeatMs: config.sseHeartbeatMs, maxBufferedBytes: config.sseMaxBufferedBytes };
	return createRouter()
		.openapi(sessionEvents, (c) => {
			const session = registry.get(c.req.valid("param").id);
			const { after: afterQuery, types } = c.req.valid("query");
			const header = c.req.valid("header")["last-event-id"];
			if (session.sseSubscribers >= config.maxSubscribers) {
				throw new ApiError(
					429,
					"too_many_subscribers",
					`Session ${session.id} already has ${session.sseSubscribers} subscribers`,
				);
			}
			const after = header !== undefined ? Number(header) : (afterQuery ?? session.log.lastSeq);
			const accept = typeFilter(types);
			return sseStream(c, sse, (out) => {
				out.push(
					gatewayFrame(
						"stream_open",
						{
							sessionId: session.id,
							after,
							lastEventId: session.log.lastSeq,
							firstAvailable: session.log.firstSeq,
							status: session.status,
						},
						after,
					),
				);
				return followSession(session, out, after, accept);
			}) as never;
		})
		.openapi(allEvents, (c) => {
			const accept = typeFilter(c.req.valid("query").types);
			return sseStream(c, sse, (out) => {
				out.push(gatewayFrame("stream_open", { sessions: registry.list().map((s) => s.id) }));
				return registry.subscribeAll((sessionId, event) => {
					if (!accept || accept(event.type)) out.push(frame(event, `${sessionId}:${event.seq}`));
				});
			}) as never;
		});
}
