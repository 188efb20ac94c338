import { streamRoute } from "../../streams/stream-routes.ts";
import { jsonBody } from "../../transport/openapi.ts";
import { runBody } from "./runs.routes.ts";

/**
 * The streamed variants of prompt, steer, follow-up and bash, each an operation of its own at
 * `…/stream`. SDK generators type one answer per operation: on the plain path they get the JSON
 * result, here a stream whose items are `StreamEvent` (the parsed `data:` of each frame, which
 * is what SSE clients such as hey-api's yield). The plain paths still answer
 * `Accept: text/event-stream` the same way, for curl and hand-written clients.
 */

export const streamedRunDescription =
	"The run as Server-Sent Events. The gateway subscribes first, then sends the command; if pi refuses it the answer is the HTTP error (no stream); else a stream of `stream_open`, pi's `response`, and every event of the session through the `agent_settled` that ends the run, after which the stream ends. A `handled` prompt (an extension command) streams whatever it caused and ends with pi's response; a steer or follow-up sent while no run is active stays queued for the next prompt and its stream ends with the response. A dialog opened before pi's response starts the stream at once (pi answers only after the dialog is answered): `approval_requested` arrives in the stream, and answering it through the approvals resource lets the run go on. A gateway failure after the stream began (pi did not answer in time, or exited) is a final `error` event.";

/** A run's stream route, whose body also takes the gateway's own fields (outputSchema, limits). */
const runStream = (operationId: string, path: string, type: "prompt" | "steer" | "follow_up", summary: string) => {
	const route = streamRoute({ operationId, path, type, tag: "runs", summary, description: streamedRunDescription });
	return { ...route, request: { ...route.request, body: jsonBody(runBody(type)) } };
};

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
