import { createRoute, z } from "@hono/zod-openapi";
import { EventStreamDoc, eventStreamFraming } from "../../streams/event-schemas.ts";
import { SseHeaders } from "../../streams/stream-routes.ts";
import { problems } from "../../transport/openapi.ts";
import { SessionParams } from "../../transport/params.ts";

export const StreamQuery = z.object({
	// z.coerce documents itself as nullable; a query string cannot carry null.
	after: z.coerce.number().int().min(0).optional().openapi({
		type: "integer",
		minimum: 0,
		description:
			"Replay events after this sequence number (Last-Event-ID wins when both are sent); 0 replays the whole log; past the last event is a 400",
	}),
	types: z
		.string()
		.regex(/^[a-z_]+(,[a-z_]+)*$/)
		.optional()
		.openapi({ description: "Comma-separated event types to receive", example: "message_update,agent_settled" }),
});

const LastEventId = z.object({
	"last-event-id": z
		.string()
		.regex(/^\d+$/)
		.optional()
		.openapi({ description: "Resume after this sequence number (sent by EventSource on reconnect)" }),
});

export const sessionEvents = createRoute({
	operationId: "events.session",
	method: "get",
	path: "/v1/sessions/{id}/events",
	tags: ["events"],
	summary: "The session's events as Server-Sent Events, resumable with Last-Event-ID",
	description:
		"Every frame: `id:` the session's sequence number, `event:` the type, `data:` pi's JSON line unchanged (or the gateway event's JSON). The first frame, `stream_open`, says where the stream joined (`after`) and what the log holds (`firstAvailable`..`lastEventId`). Without a position the stream starts live; with `Last-Event-ID` or `after` it replays everything after that position from the bounded per-session log, then goes live, with nothing lost or repeated; a position older than the log gets a `gap` frame (what was lost, where the log starts now) and the stream continues. Heartbeat comments (`: heartbeat`) keep proxies from timing out. A client that falls more than the gateway's buffer behind gets a final `dropped` frame and is cut off: reconnect with `Last-Event-ID`. The stream ends after `session_exit` (pi exited or the session was deleted). With `types`, only those events are sent; `stream_open`, `gap`, `dropped` and `session_exit` always are.",
	request: {
		params: SessionParams,
		query: StreamQuery.extend({
			ticket: z.string().optional().openapi({
				description:
					"A stream ticket from POST …/events/ticket, instead of the Authorization header (for the browser's EventSource)",
			}),
		}),
		headers: LastEventId,
	},
	responses: {
		200: {
			description: `The event stream. ${eventStreamFraming}`,
			headers: SseHeaders,
			content: { "text/event-stream": { schema: EventStreamDoc } },
		},
		...problems(400, 401, 404, 429),
	},
});

export const allEvents = createRoute({
	operationId: "events.all",
	method: "get",
	path: "/v1/events",
	tags: ["events"],
	summary: "Live events of every session (for dashboards)",
	description:
		"The live events of every session in one stream. Each frame's `id:` is `<sessionId>:<seq>`: it names the session (pi's own JSON does not) and that session's sequence number, and the data is the same as on the session's own stream. The first frame, `stream_open`, lists every session with its last sequence number. This stream is live only (Last-Event-ID is ignored): to fill a hole after a reconnect, read `/v1/sessions/{id}/events?after=<seq>` for each session. A `shutdown` frame says the gateway is stopping; the stream ends once every session has exited.",
	request: {
		query: StreamQuery.pick({ types: true }).extend({
			ticket: z.string().optional().openapi({
				description:
					"A ticket from POST /v1/events/ticket, instead of the Authorization header (for the browser's EventSource)",
			}),
		}),
	},
	responses: {
		200: {
			description: `The event stream. ${eventStreamFraming}`,
			headers: SseHeaders,
			content: { "text/event-stream": { schema: EventStreamDoc } },
		},
		...problems(400, 401, 429),
	},
});

export const AllEventsTicket = z
	.object({
		ticket: z.string().openapi({
			description: "A short-lived credential for this one stream, to pass as `?ticket=`",
			example: "mbc1x2kq.4Jq2yTq0S1w6mM7b9cR8u0mJmXQ2c2o9m8b1sG3pQkE",
		}),
		expiresAt: z.string().openapi({ format: "date-time", description: "When the ticket stops being accepted" }),
		eventsUrl: z.string().openapi({
			description: "The all-sessions stream with the ticket in its query: give this to EventSource",
			example: "/v1/events?ticket=mbc1x2kq.4Jq2…",
		}),
	})
	.openapi("AllEventsTicket", {
		description: "A ticket that lets EventSource, which cannot send headers, open the all-sessions stream",
		example: {
			ticket: "mbc1x2kq.4Jq2yTq0S1w6mM7b9cR8u0mJmXQ2c2o9m8b1sG3pQkE",
			expiresAt: "2026-12-01T10:01:00.000Z",
			eventsUrl: "/v1/events?ticket=mbc1x2kq.4Jq2yTq0S1w6mM7b9cR8u0mJmXQ2c2o9m8b1sG3pQkE",
		},
	});

export const createAllEventsTicket = createRoute({
	operationId: "events.allTicket",
	method: "post",
	path: "/v1/events/ticket",
	tags: ["events"],
	summary: "A short-lived ticket that opens GET /v1/events without a header",
	description:
		"For browsers: EventSource cannot send `Authorization`. The ticket goes in `?ticket=` of `GET /v1/events` only. It opens new streams until `expiresAt`; a stream opened with it keeps reconnecting with it after that (EventSource retries the same URL) while the stream is connected or was within the last 5 minutes, for at most 24 hours; a gateway restart revokes it. Keep the long-lived token out of URLs.",
	responses: {
		201: {
			description: "The ticket",
			content: { "application/json": { schema: AllEventsTicket } },
		},
		...problems(401),
	},
});
