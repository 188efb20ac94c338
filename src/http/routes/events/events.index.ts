import { mayAccess } from "../../auth/ownership.ts";
import { hasScope, type Principal } from "../../auth/principals.ts";
import { allEventsScope } from "../../auth/tickets.ts";
import { followPeers } from "../../streams/cluster-hub.ts";
import { followAll, followSession, typeFilter } from "../../streams/follow.ts";
import { sseOptions } from "../../streams/options.ts";
import { Outbox, sseStream } from "../../streams/sse.ts";
import { gatewayFrame } from "../../streams/sse-frames.ts";
import { StreamShares } from "../../streams/stream-shares.ts";
import { createRouter } from "../../transport/openapi.ts";
import { ApiError } from "../../transport/problem.ts";
import type { Deps } from "../deps.ts";
import { allEvents, createAllEventsTicket, sessionEvents } from "./events.routes.ts";

export function eventsRouter({ registry, config, tickets, access, cluster }: Deps) {
	const sse = sseOptions(config);
	// Each all-sessions stream sees every event of every session: bounded like a session's subscribers,
	// and each principal but an admin to its share of either cap (stream-shares.ts).
	let hubStreams = 0;
	const hubShares = new StreamShares();
	const sessionShares = new StreamShares();
	const limited = (principal: Principal | undefined) => principal !== undefined && !hasScope(principal, "admin");
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
			// A principal the session is shared with holds a share of its subscribers, never all of them.
			const principal = c.get("principal");
			const guest = limited(principal) && access.get(session.id).owner !== principal?.name;
			const key = `${session.id}\n${principal?.name}`;
			const share = StreamShares.shareOf(config.maxSubscribers);
			if (guest && sessionShares.held(key) >= share)
				throw new ApiError(
					429,
					"too_many_subscribers",
					`${principal?.name} already has ${share} streams of session ${session.id}, a share of its --max-subscribers`,
				);
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
			const unfollow = followSession(session, out, { after, accept: typeFilter(types) });
			const release = guest ? sessionShares.take(key) : () => {};
			return sseStream(c, sse, out, () => {
				release();
				unfollow();
			});
		})
		.openapi(allEvents, async (c) => {
			if (hubStreams >= config.maxEventStreams) {
				throw new ApiError(
					429,
					"too_many_subscribers",
					`The all-sessions stream already has ${hubStreams} subscribers (--max-event-streams)`,
				);
			}
			const principal = c.get("principal");
			const share = StreamShares.shareOf(config.maxEventStreams);
			if (limited(principal) && hubShares.held(principal?.name as string) >= share)
				throw new ApiError(
					429,
					"too_many_subscribers",
					`${principal?.name} already has ${share} all-sessions streams, a share of --max-event-streams`,
				);
			const out = new Outbox(sse.maxBufferedBytes);
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
			const release = limited(principal) ? hubShares.take(principal?.name as string) : () => {};
			// sseStream calls this once, whichever way the stream ends.
			const detach = () => {
				hubStreams--;
				release();
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
