import { createRoute } from "@hono/zod-openapi";
import { type CommandType, commandFields } from "../../../pi/protocol.ts";
import { commandProblems, jsonBody, problems } from "../../openapi.ts";
import { EventStreamDoc, eventStreamFraming } from "../../streams/event-schemas.ts";
import { SseHeaders } from "../events/events.routes.ts";
import { SessionParams } from "../sessions/sessions.routes.ts";

/**
 * The streamed variants of prompt, steer, follow-up and bash, each an operation of its own at
 * `…/stream`. SDK generators type one answer per operation: on the plain path they get the JSON
 * result, here a stream whose items are `StreamEvent` (the parsed `data:` of each frame, which
 * is what SSE clients such as hey-api's yield). The plain paths still answer
 * `Accept: text/event-stream` the same way, for curl and hand-written clients.
 */

export const streamedRunDescription =
	"The run as Server-Sent Events. The gateway subscribes first, then sends the command; if pi refuses it the answer is the HTTP error (no stream); else a stream of `stream_open`, pi's `response`, and every event of the session through the `agent_settled` that ends the run, after which the stream ends. A `handled` prompt (an extension command) streams whatever it caused and ends with pi's response; a steer or follow-up sent while no run is active stays queued for the next prompt and its stream ends with the response. A dialog opened before pi's response starts the stream at once (pi answers only after the dialog is answered): `approval_requested` arrives in the stream, and answering it through the approvals resource lets the run go on. A gateway failure after the stream began (pi did not answer in time, or exited) is a final `error` event.";

export function streamedCommandDescription(type: string, eventType: string): string {
	return `Sends pi's \`${type}\` command and answers with a stream: \`stream_open\`, then each \`${eventType}\` event of this command as pi prints it, then pi's \`response\` (the same data as the JSON answer of the plain operation), then the stream ends. A command that fails at once (queue full, pi gone) is still an HTTP error.`;
}

export function sseResponse(description: string) {
	return {
		description: `${description} ${eventStreamFraming}`,
		headers: SseHeaders,
		content: { "text/event-stream": { schema: EventStreamDoc } },
	};
}

export function streamRoute(options: {
	operationId: string;
	path: string;
	type: CommandType;
	tag: "runs" | "commands";
	summary: string;
	description: string;
}) {
	return createRoute({
		operationId: options.operationId,
		"x-pi-command": options.type,
		method: "post",
		path: `/v1/sessions/{id}${options.path}/stream`,
		tags: [options.tag],
		summary: options.summary,
		description: options.description,
		request: { params: SessionParams, body: jsonBody(commandFields[options.type]) },
		responses: {
			200: sseResponse("The events, as they happen."),
			...problems(...commandProblems),
		},
	});
}

const runStream = (operationId: string, path: string, type: CommandType, summary: string) =>
	streamRoute({ operationId, path, type, tag: "runs", summary, description: streamedRunDescription });

export const promptStream = runStream(
	"sessions.promptStream",
	"/prompt",
	"prompt",
	"Send a prompt and stream its run until it settles",
);
export const steerStream = runStream(
	"sessions.steerStream",
	"/steer",
	"steer",
	"Steer the running agent and stream the run until it settles",
);
export const followUpStream = runStream(
	"sessions.followUpStream",
	"/follow-up",
	"follow_up",
	"Queue a follow-up message and stream the run until it settles",
);
