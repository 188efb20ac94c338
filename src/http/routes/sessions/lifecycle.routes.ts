import { createRoute, z } from "@hono/zod-openapi";
import { json, problems } from "../../transport/openapi.ts";
import { SessionParams } from "../../transport/params.ts";
import { SessionView } from "./session-view.ts";

export const resumeSession = createRoute({
	operationId: "sessions.resume",
	method: "post",
	path: "/v1/sessions/{id}/resume",
	tags: ["sessions"],
	summary: "Start pi again on the session's file (after hibernation, a crash or a gateway restart)",
	description:
		"Answers once pi is ready, with the conversation as it was. A session that already has a pi process is returned unchanged. Commands sent to a `stopped` session do this by themselves unless the gateway runs with auto-resume off. Ephemeral sessions (`persist:false`) cannot be resumed (409). A model pi no longer knows is 422 `unknown_model`.",
	request: { params: SessionParams },
	responses: {
		200: json(SessionView, "The session, with pi running"),
		...problems(400, 401, 403, 404, 409, 410, 422, 429, 502, 503),
	},
});

export const StreamTicket = z
	.object({
		ticket: z.string().openapi({
			description: "A short-lived credential for this one stream, to pass as `?ticket=`",
			example: "mbc1x2kq.4Jq2yTq0S1w6mM7b9cR8u0mJmXQ2c2o9m8b1sG3pQkE",
		}),
		expiresAt: z.string().openapi({ format: "date-time", description: "When the ticket stops being accepted" }),
		eventsUrl: z.string().openapi({
			description: "The session's event stream with the ticket in its query: give this to EventSource",
			example: "/v1/sessions/ses_Qm9wYXJ0aWFs/events?ticket=mbc1x2kq.4Jq2…",
		}),
	})
	.openapi("StreamTicket", {
		description: "A ticket that lets EventSource, which cannot send headers, open the session's stream",
		example: {
			ticket: "mbc1x2kq.4Jq2yTq0S1w6mM7b9cR8u0mJmXQ2c2o9m8b1sG3pQkE",
			expiresAt: "2026-12-01T10:01:00.000Z",
			eventsUrl: "/v1/sessions/ses_Qm9wYXJ0aWFs/events?ticket=mbc1x2kq.4Jq2yTq0S1w6mM7b9cR8u0mJmXQ2c2o9m8b1sG3pQkE",
		},
	});

export const createStreamTicket = createRoute({
	operationId: "sessions.streamTicket",
	method: "post",
	path: "/v1/sessions/{id}/events/ticket",
	tags: ["events"],
	summary: "A short-lived ticket that opens this session's event stream without a header",
	description:
		"For browsers: EventSource cannot send `Authorization`. The ticket goes in `?ticket=` of `GET /v1/sessions/{id}/events` only, for this session only, and opens new streams until `expiresAt`; a stream opened with it keeps reconnecting with it after that (EventSource retries the same URL) while the stream is connected or was within the last 5 minutes, for at most 24 hours; a gateway restart revokes it. Keep the long-lived token out of URLs.",
	request: { params: SessionParams },
	responses: {
		201: json(StreamTicket, "The ticket"),
		...problems(401, 404, 410),
	},
});
