import type { PiResponse } from "../../pi/protocol.ts";
import { GatewayError } from "../../shared/errors.ts";

const busy = /already processing|is streaming|while streaming|agent is busy/i;

/** pi's answer's `data`, or its `success:false` as an error: busy → 409, anything else pi refused → 422. */
export function unwrap(response: PiResponse): unknown {
	if (response.success) return response.data;
	const message = response.error ?? `pi refused ${response.command}`;
	if (busy.test(message)) throw new GatewayError(409, "agent_busy", message);
	throw new GatewayError(422, "pi_refused", message);
}
