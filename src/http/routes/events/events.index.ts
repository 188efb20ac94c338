import { mayAccess } from "../../auth/ownership.ts";
import { allEventsScope } from "../../auth/tickets.ts";
import { followPeers } from "../../streams/cluster-hub.ts";
import { followAll, followSession, typeFilter } from "../../streams/follow.ts";
import { sseOptions } from "../../streams/options.ts";
import { Outbox, sseStream } from "../../streams/sse.ts";
import { gatewayFrame } from "../../streams/sse-frames.ts";
import { createRouter } from "../../transport/openapi.ts";
import { ApiError } from "../../transport/problem.ts";
import type { Deps } from "../deps.ts";
import { allEvents, createAllEventsTicket, sessionEvents } from "./events.routes.ts";

export function eventsRouter({ registry, config, tickets, access, cluster }: Deps) {
	const sse = sseOptions(config);
	// Each all-sessions stream sees every event of every session: bounded like a session's subscribers.
	let hubStreams = 0;
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
			const last = session.events.lastSeq;
			const after = header !== undefined ? Number(header) : (afterQuery ?? last);
			if (after > last) {
				throw new ApiError(
					400,
					"position_out_of_range",
					`Position ${after} is past the end of session ${session.id}'s log (its last event is ${last})`,
				);
			}
			const out = new Outbox(sse.maxBufferedBytes);
			const open = {
				sessionId: session.id,
				after,
				lastEventId: last,
				firstAvailable: session.events.firstSeq,
				status: session.status,
			};
			// No `id:`: the resume point is an event's id, and an id names exactly one event (README: Events).
			out.push(gatewayFrame("stream_open", open));
			return sseStream(c, sse, out, followSession(session, out, { after, accept: typeFilter(types) }));
		})
		.openapi(allEvents, async (c) => {
			if (hubStreams >= config.maxEventStreams) {
				throw new ApiError(
					429,
					"too_many_subscribers",
					`The all-sessions stream already has ${hubStreams} subscribers (--max-event-streams)`,
				);
			}
			const out = new Outbox(sse.maxBufferedBytes);
			const principal = c.get("principal");
			// Cluster mode: the other nodes' sessions too, unless another node asks for this one's own.
			const node = cluster?.();
			const peers = node && !node.isForwarded(c.req.raw.headers) ? await followPeers(node, c.req.raw, out) : undefined;
			// Each principal's stream carries the sessions it may read, and no other's.
			const visible = (id: string) => !principal || mayAccess(access, principal, id, "sessions:read");
			const sessions = registry
				.list()
				.filter((s) => visible(s.id))
				.map((s) => ({ id: s.id, lastEventId: s.events.lastSeq, firstAvailable: s.events.firstSeq, status: s.status }));
			if (peers) sessions.push(...peers.sessions);
			out.push(gatewayFrame("stream_open", { sessions }));
			const unsubscribe = followAll(registry, out, typeFilter(c.req.valid("query").types), visible);
			peers?.start();
			hubStreams++;
			// sseStream calls this once, whichever way the stream ends.
			const detach = () => {
				hubStreams--;
				unsubscribe();
				peers?.stop();
			};
			return sseStream(c, sse, out, detach);
		})
		.openapi(createAllEventsTicket, (c) => {
			const { ticket, expiresAt } = tickets.issue(allEventsScope, undefined, c.get("principal")?.name);
			return c.json({ ticket, expiresAt, eventsUrl: `/v1/events?ticket=${ticket}` }, 201);
		});
}
