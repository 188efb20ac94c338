import type { ExitInfo } from "../../pi/child.ts";
import { GatewayError } from "../../shared/errors.ts";
import type { SessionStatus, StopReason } from "./session-types.ts";

/** pi could not be spawned at all (no such command, no permission). */
export function spawnError(error: unknown): GatewayError {
	// Refused before the spawn with a reason of the gateway's own (the folder replaced by a link).
	if (error instanceof GatewayError) return error;
	return new GatewayError(502, "pi_spawn_failed", `Could not start pi: ${(error as Error).message}`);
}

/** pi's own words when it refuses the model it was started with (`--model`), before any command. */
const modelRefused = /^Error: (Model "[^"\n]*" not found\.)/m;

/**
 * pi ran but did not answer its first commands (get_state, and a legacy pi's set-up). A model pi
 * does not know makes it exit at once: that is the caller's input, 422 unknown_model as the check
 * after start answers for a model pi starts on but cannot use, not a 502.
 */
export function startError(error: unknown, stderrTail: string): GatewayError {
	const refused = modelRefused.exec(stderrTail);
	if (refused)
		return new GatewayError(
			422,
			"unknown_model",
			`pi refused the session's model: ${refused[1]} See GET …/models of a session for the ones it offers.`,
		);
	const detail = error instanceof GatewayError ? error.message : String(error);
	return new GatewayError(502, "pi_start_failed", `pi did not start: ${detail}`, { stderr: stderrTail });
}

/** What a command still waiting for pi gets when pi exits, by why it exited. */
export function exitError(
	sessionId: string,
	reason: StopReason | undefined,
	crashed: boolean,
	info: ExitInfo,
	stderrTail: string,
): GatewayError {
	if (reason === "stopped" && !crashed)
		return new GatewayError(410, "session_deleted", `Session ${sessionId} was deleted before pi answered this command`);
	if (reason === "shutdown" && !crashed) return new GatewayError(503, "shutting_down", "The gateway is shutting down");
	return new GatewayError(
		502,
		crashed ? "pi_crashed" : "pi_exited",
		`pi ${crashed ? "crashed" : "exited"} (code ${info.code}, signal ${info.signal})`,
		{ stderr: stderrTail },
	);
}

/** What a command meets on a session without a pi process: undefined when it may wait for one (starting). */
export function notRunningError(
	sessionId: string,
	status: SessionStatus,
	exit: { stderrTail: string } | undefined,
): GatewayError | undefined {
	if (status === "stopped") {
		return new GatewayError(
			409,
			"session_stopped",
			`Session ${sessionId} is stopped; POST /v1/sessions/${sessionId}/resume starts pi again`,
		);
	}
	if (!exit) return undefined;
	return new GatewayError(502, status === "crashed" ? "pi_crashed" : "pi_exited", `Session ${sessionId} is ${status}`, {
		stderr: exit.stderrTail,
	});
}
