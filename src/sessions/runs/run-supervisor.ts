import { z } from "@hono/zod-openapi";
import type { PiCommand } from "../../pi/protocol.ts";
import type { Session } from "../session/session.ts";
import { LimitWatch, RunLimits } from "./run-limits.ts";
import { compileOutputSchema, instruction } from "./run-output.ts";
import { OutputWatch } from "./run-output-watch.ts";

/** What a run command carries for the gateway itself, beside pi's fields. */
export interface RunControls {
	outputSchema?: unknown;
	limits?: RunLimits;
}

type RunCommand = PiCommand & { id: string; message?: string };

/**
 * Turns a run command's gateway fields into watches on the run it starts or joins: the output
 * schema is checked first (400 `invalid_output_schema`, nothing sent) and its instruction appended
 * to the message. Call it before the command is sent; `dispose` when sending it failed.
 */
export function superviseRun(
	session: Session,
	command: RunCommand,
	{ outputSchema, limits }: RunControls,
): { command: RunCommand; dispose: () => void } {
	const spec = outputSchema === undefined ? undefined : compileOutputSchema(outputSchema);
	const sent = spec ? { ...command, message: `${command.message ?? ""}${instruction(spec)}` } : command;
	const watches: { dispose(): void }[] = [];
	// Limits first: their event must be logged before the output's, both before the settle.
	if (limits && Object.keys(limits).length > 0) watches.push(new LimitWatch(session, command.id, limits));
	if (spec) watches.push(new OutputWatch(session, command.id, spec));
	return {
		command: sent,
		dispose: () => {
			for (const watch of watches) watch.dispose();
		},
	};
}

/** The gateway's own fields of prompt, steer and follow-up (pi never sees them). */
export const runControlFields = {
	outputSchema: z
		.record(z.string(), z.unknown())
		.optional()
		.openapi({
			description:
				"Structured output: a JSON Schema (2020-12) the run's answer must validate against. The gateway tells the model the shape (an instruction after the message), reads the run's last assistant text as JSON, and sends up to 2 repair turns when it does not validate; the result then carries `output` or `outputError`, and the stream a `run_output` event before `agent_settled`. A schema that is not one is 400 `invalid_output_schema` before pi. docs/structured-output.md",
			example: { type: "object", properties: { answer: { type: "string" } }, required: ["answer"] },
		}),
	limits: RunLimits.optional(),
};
