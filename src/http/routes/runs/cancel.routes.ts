import { createRoute, z } from "@hono/zod-openapi";
import { json, problem, problems } from "../../transport/openapi.ts";
import { SessionParams } from "../../transport/params.ts";

const RunParams = SessionParams.extend({
	runId: z.string().openapi({
		param: { name: "runId", in: "path" },
		description: "The run's id, as the prompt, steer or follow-up answered it (`runId`)",
		example: "gw_1",
	}),
});

export const RunCancelled = z
	.object({
		runId: z.string().openapi({ description: "The run cancelled", example: "gw_1" }),
		state: z.enum(["aborted", "cancelled"]).openapi({
			description:
				"`aborted`: the run was in progress (or its command was with pi, not answered yet); pi aborted it and it has ended (its `agent_settled` says `aborted: true`). `cancelled`: its command still waited in the session's queue behind another and was taken out before pi saw it (the command's own caller gets 409 `run_cancelled`)",
		}),
	})
	.openapi("RunCancelled", {
		description: "What became of the cancelled run",
		example: { runId: "gw_1", state: "aborted" },
	});

export const cancelRunRoute = createRoute({
	operationId: "sessions.cancelRun",
	method: "post",
	path: "/v1/sessions/{id}/runs/{runId}/cancel",
	tags: ["runs"],
	summary: "Cancel one run: abort it if it is in progress, drop it if it still waits in the queue",
	description:
		"Cancels the run `runId` of this session and no other: when it is the run in progress, pi aborts it (pending dialogs and client tool calls of the run are cancelled, as `POST …/abort` does) and the answer comes once it has ended; when its command still waits in the session's queue (behind a command pi has not answered), it is taken out and never reaches pi. A run that already settled is 409 `run_not_active`. A steer or follow-up that pi queued into a run is part of that run: cancelling the run's id aborts the run.",
	request: { params: RunParams },
	responses: {
		200: json(RunCancelled, "The run was aborted (it has ended) or taken out of the queue"),
		404: problem("No such session, or no run with this id in it (`run_not_found`)"),
		409: problem(
			"`run_not_active`: the run already settled (or, a steer or follow-up sent with no run active, pi holds it in its own queue: `POST …/queue/clear`); or the session is stopped",
		),
		...problems(400, 401, 403, 410, 422, 429, 502, 503, 504),
	},
});
