import { createRoute, z } from "@hono/zod-openapi";
import { commandFields } from "../../../pi/protocol.ts";
import { Approval } from "../../../sessions/dialogs/index.ts";
import { LimitHit, runControlFields } from "../../../sessions/runs/index.ts";
import { ResumeHeader, resumeAfter } from "../../streams/resume.ts";
import { commandErrors, json, jsonBody } from "../../transport/openapi.ts";
import { SessionParams } from "../../transport/params.ts";
import { AgentMessage, Usage } from "../../transport/schemas.ts";

export const RunAccepted = z
	.object({
		runId: z.string().openapi({
			description:
				"The run this command started, or the active run pi queued it into (a steer or follow-up: `…/changes?runId=` and the run's events name it); with no run active, the command's own id (a steer or follow-up then waits for the next prompt, whose run has that prompt's id)",
		}),
		disposition: z.enum(["started", "queued", "handled", "awaiting_approval", "pending"]).openapi({
			description:
				"pi's `disposition`, or what the gateway answered before pi did: `awaiting_approval` (a dialog holds the run: it opened before pi answered, or a waited run met its deadline while the dialog was pending; answer `approvals`), `pending` (the wait ran out before pi answered). Either way pi's answer comes later as the `response` event on `eventsUrl`",
		}),
		eventsUrl: z.string().openapi({
			description: "Where to follow the run: the session's stream from just before this command",
			example: "/v1/sessions/ses_Qm9wYXJ0aWFs/events?after=41",
		}),
		// Dialogs that hold pi's answer (issue 11 item 2).
		approvals: z
			.array(
				z.object({
					id: z.string().describe("The approval's id"),
					url: z.string().openapi({
						description: "Where to answer it (POST)",
						example: "/v1/sessions/ses_Qm9wYXJ0aWFs/approvals/3f1c…",
					}),
					approval: Approval,
				}),
			)
			.optional()
			.openapi({ description: "With `awaiting_approval`: the dialogs pi waits on, each with the URL to answer it" }),
	})
	.openapi("RunAccepted", {
		description: "A run command pi accepted (or a dialog holds, or the wait ran out): where to follow it",
		example: { runId: "gw_1", disposition: "started", eventsUrl: "/v1/sessions/ses_Qm9wYXJ0aWFs/events?after=41" },
	});

export const RunResult = z
	.object({
		runId: z
			.string()
			.describe(
				"The run this command started, or the active run pi queued it into (a steer or follow-up: `…/changes?runId=` and the run's events name it); with no run active, the command's own id (a steer or follow-up then waits for the next prompt, whose run has that prompt's id)",
			),
		disposition: z
			.enum(["started", "queued", "handled"])
			.describe("pi's `disposition`: it started a run, queued the message, or an extension command handled it"),
		aborted: z.boolean().describe("The run was aborted (`POST …/abort`, a limit, or pi's exit)"),
		messages: z
			.array(AgentMessage)
			.openapi({ description: "Messages completed during the run (user, assistant, tool results)" }),
		text: z.string().nullable().openapi({ description: "Text of the last assistant message that had text" }),
		stopReason: z
			.string()
			.nullable()
			.describe("Why the last assistant message ended (`stop`, `length`, `toolUse`, `aborted`, `error`); null if none"),
		usage: Usage.nullable().openapi({ description: "Token usage of the last assistant message (pi's `usage`)" }),
		firstEventId: z
			.number()
			.int()
			.openapi({ description: "Sequence number of the first event after the command was sent" }),
		lastEventId: z
			.number()
			.int()
			.openapi({ description: "Sequence number of the event that ended the run (its agent_settled)" }),
		output: z
			.unknown()
			.optional()
			.openapi({
				description:
					"With `outputSchema`: the JSON value read from the run's last answer, valid against the schema (absent when `outputError` is set)",
				example: { answer: "42" },
			}),
		outputError: z
			.object({
				message: z.string().openapi({ description: "Why no answer validated (the last attempt's problem)" }),
				attempts: z
					.number()
					.int()
					.openapi({ description: "Answers read: the first and each repair turn's", example: 3 }),
			})
			.optional()
			.openapi({
				description: "With `outputSchema`: no answer validated after the repair turns (absent when `output` is set)",
			}),
		limit: LimitHit.optional().openapi({ description: "The run limit (`limits`) that aborted the run" }),
	})
	.openapi("RunResult", {
		description: "A run that settled (wait mode): what it said and did",
		example: {
			runId: "gw_1",
			disposition: "started",
			aborted: false,
			messages: [
				{ role: "user", content: [{ type: "text", text: "echo: hello" }], timestamp: 1764583200000 },
				{
					role: "assistant",
					content: [{ type: "text", text: "hello" }],
					stopReason: "stop",
					timestamp: 1764583200400,
				},
			],
			text: "hello",
			stopReason: "stop",
			usage: { input: 3, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 4 },
			firstEventId: 42,
			lastEventId: 49,
		},
	});

/** A run command's body: pi's fields and the gateway's own (outputSchema, limits). */
export const runBody = (type: "prompt" | "steer" | "follow_up") => commandFields[type].extend(runControlFields);

/**
 * `?wait=N` seconds, documented with one type every generator can send (a `boolean | integer`
 * became `object` in swagger-codegen, and Python sends `True`). The gateway still takes the
 * older `true` (its limit) and `false`.
 */
const WaitQuery = z.object({
	wait: z
		.custom<string>((value) => typeof value === "string" && /^(true|false|\d+)$/.test(value), "true, false or seconds")
		.openapi({ type: "integer", minimum: 0 })
		.optional()
		.openapi({
			description:
				"Seconds to wait for the run to settle, at most the gateway's limit (same as `Prefer: wait=N`); `true` (the limit) and `false` are also accepted",
			example: 60,
		}),
	after: resumeAfter,
});

const PreferHeader = ResumeHeader.extend({
	prefer: z.string().optional().openapi({
		description:
			"RFC 7240 `wait` or `wait=N` (seconds): answer 200 once the run settles. With `cancel-on-disconnect` beside it (`wait=60, cancel-on-disconnect`), a caller whose connection closes before the answer cancels the run as `POST …/runs/{runId}/cancel` does (the TypeScript and Python clients' prompt-and-wait helpers send it unless told not to)",
		example: "wait=60, cancel-on-disconnect",
	}),
});

/** How the JSON answers treat a dialog that holds pi's answer. */
const heldByDialog =
	" A dialog that opens before pi answered the command (an extension command that asks first) holds pi's answer until it is answered, so the JSON answer does not wait for it: 202 at once with `disposition: awaiting_approval` and the pending `approvals` (answer each at its `url`); pi's answer follows as the `response` event on `eventsUrl`. Wait mode keeps its deadline even while pi has not answered (then `disposition: pending`); a run that a dialog holds at the deadline (a tool's permission prompt) answers `disposition: awaiting_approval` with the pending `approvals` too.";

function messageRoute(operationId: string, path: string, type: "prompt" | "steer" | "follow_up", summary: string) {
	return createRoute({
		operationId,
		"x-pi-command": type,
		method: "post",
		path: `/v1/sessions/{id}${path}`,
		tags: ["runs"],
		summary,
		description:
			"Three answers, by what the client asks for. Default (`Accept: application/json`): 202 with the run id once pi accepted the command. `Accept: text/event-stream`: the gateway subscribes first, then sends the command; if pi refuses it the answer is the HTTP error (no stream); else a stream of `stream_open`, pi's `response`, and every event of the session through the `agent_settled` that ends the run, after which the stream ends. A `handled` prompt (an extension command) streams whatever it caused and ends with pi's response; a steer or follow-up sent while no run is active stays queued for the next prompt and its stream ends with the response. A dialog opened before pi's response starts the stream at once (pi answers only after the dialog is answered); answering it through the approvals resource lets the stream go on. Wait mode, `Prefer: wait=N` (RFC 7240, seconds; a bare `wait` means the gateway's limit) or `?wait=true|N`: 200 once the run ends, with the messages completed since the command was sent, the last assistant text, stop reason and usage (`Preference-Applied` echoes the preference); past the wait limit, or for a steer or follow-up with no run to join, 202 with the run id and `eventsUrl`, the session's stream from just before the command." +
			heldByDialog,
		request: {
			params: SessionParams,
			query: WaitQuery,
			headers: PreferHeader,
			body: jsonBody(runBody(type)),
		},
		responses: {
			200: {
				description: `Wait mode: the run ended. Only the JSON answers are typed here: the stream that \`Accept: text/event-stream\` asks for is also the operation \`POST …${path}/stream\`, typed as a stream of \`StreamEvent\`.`,
				headers: {
					"Preference-Applied": {
						description: "Wait mode: the `wait` preference that was applied",
						schema: { type: "string" as const },
					},
				},
				content: { "application/json": { schema: RunResult } },
			},
			202: json(
				RunAccepted,
				"pi accepted it, or a dialog holds pi's answer (`awaiting_approval`), or the wait ran out first; follow the run on the event stream",
			),
			...commandErrors(),
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
