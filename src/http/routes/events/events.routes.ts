import { createRoute, z } from "@hono/zod-openapi";
import { problems } from "../../openapi.ts";
import { SessionParams } from "../sessions/sessions.routes.ts";
import { EventStreamDoc } from "./event-schemas.ts";

export const StreamQuery = z.object({
	after: z.coerce.number().int().min(0).optional().openapi({
		description:
			"Replay events after this sequence number (Last-Event-ID wins when both are sent); 0 replays the whole log",
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
		"Every frame: `id:` the session's sequence number, `event:` the type, `data:` pi's JSON unchanged (or the gateway event's JSON). The first frame, `stream_open`, says where the stream joined. A position older than the log gets a `gap` frame first. Heartbeat comments keep proxies open. The stream ends after `session_exit`.",
	request: { params: SessionParams, query: StreamQuery, headers: LastEventId },
	responses: {
		200: { description: "The event stream", content: { "text/event-stream": { schema: EventStreamDoc } } },
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
		"Frames carry `id: <sessionId>:<seq>`, so each names its session; the data is the same as on the session's own stream. Live only: to replay, use the session's stream with `after`.",
	request: { query: StreamQuery.pick({ types: true }) },
	responses: {
		200: { description: "The event stream", content: { "text/event-stream": { schema: EventStreamDoc } } },
		...problems(400, 401),
	},
});
