import { createRoute, z } from "@hono/zod-openapi";
import { commandFields } from "../../../pi/protocol.ts";
import { commandProblems, json, problems } from "../../openapi.ts";
import { AgentMessage } from "../../schemas.ts";
import { EventStreamDoc } from "../events/event-schemas.ts";
import { SessionParams } from "../sessions/sessions.routes.ts";

export const RunAccepted = z
	.object({
		runId: z.string().openapi({ description: "The gateway's id for this command; the run it started or joined" }),
		disposition: z.enum(["started", "queued", "handled"]),
		eventsUrl: z.string().openapi({
			description: "Where to follow the run: the session's stream from just before this command",
			example: "/v1/sessions/ses_Qm9wYXJ0aWFs/events?after=41",
		}),
	})
	.openapi("RunAccepted");

export const RunResult = z
	.object({
		runId: z.string(),
		disposition: z.enum(["started", "queued", "handled"]),
		aborted: z.boolean(),
		messages: z
			.array(AgentMessage)
			.openapi({ description: "Messages completed during the run (user, assistant, tool results)" }),
		text: z.string().nullable().openapi({ description: "Text of the last assistant message that had text" }),
		stopReason: z.string().nullable(),
		usage: z.unknown().nullable(),
		firstEventId: z.number().int(),
		lastEventId: z.number().int(),
	})
	.openapi("RunResult");

const WaitQuery = z.object({
	wait: z
		.string()
		.regex(/^(true|false|\d+)$/)
		.optional()
		.openapi({ description: "`true` or seconds: answer when the run settles (same as `Prefer: wait=N`)" }),
});

const PreferHeader = z.object({
	prefer: z.string().optional().openapi({
		description: "RFC 7240 `wait` or `wait=N` (seconds): answer 200 once the run settles",
		example: "wait=60",
	}),
});

function messageRoute(operationId: string, path: string, type: "prompt" | "steer" | "follow_up", summary: string) {
	return createRoute({
		operationId,
		method: "post",
		path: `/v1/sessions/{id}${path}`,
		tags: ["runs"],
		summary,
		description:
			"Three answers, by what the client asks for. Default (`Accept: application/json`): 202 with the run id once pi accepted it. `Accept: text/event-stream`: the events from this command's response to the run's `agent_settled`, then the stream ends (a `handled` command ends after its response). `Prefer: wait` / `?wait=true`: 200 after `agent_settled` with the run's messages and text; past the wait limit 202 with where to continue.",
		request: {
			params: SessionParams,
			query: WaitQuery,
			headers: PreferHeader,
			body: { required: true, content: { "application/json": { schema: commandFields[type] } } },
		},
		responses: {
			200: {
				description: "Wait mode: the run settled",
				content: { "application/json": { schema: RunResult }, "text/event-stream": { schema: EventStreamDoc } },
			},
			202: json(RunAccepted, "pi accepted it; follow the run on the event stream"),
			...problems(...commandProblems, 409),
		},
	});
}

export const prompt = messageRoute(
	"sessions.prompt",
	"/prompt",
	"prompt",
	"Send a prompt: starts a run, or joins one with streamingBehavior",
);
export const steer = messageRoute(
	"sessions.steer",
	"/steer",
	"steer",
	"Steer the running agent (delivered after the current turn's tool calls)",
);
export const followUp = messageRoute(
	"sessions.followUp",
	"/follow-up",
	"follow_up",
	"Queue a message for when the agent finishes",
);
