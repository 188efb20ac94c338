import type { PiResponse } from "../../pi/protocol.ts";
import { ApiError } from "./problem.ts";

const busy = /already processing|is streaming|while streaming|agent is busy/i;

/** pi's `success:false` as problem+json: busy → 409, anything else pi refused → 422. */
export function unwrap(response: PiResponse): unknown {
	if (response.success) return response.data;
	const message = response.error ?? `pi refused ${response.command}`;
	if (busy.test(message)) throw new ApiError(409, "agent_busy", message);
	throw new ApiError(422, "pi_refused", message);
}
