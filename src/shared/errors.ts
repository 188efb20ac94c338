/**
 * An error the gateway's domain (pi children, sessions, approvals, the registry) raises on
 * purpose: an HTTP-style status, a stable machine-readable code, and a sentence for people.
 * It knows nothing of HTTP framing; src/http/transport/problem.ts renders it as problem+json, which is
 * why this module imports neither hono nor zod.
 */
export class GatewayError extends Error {
	readonly status: number;
	readonly code: GatewayErrorCode | (string & {});
	/** Extra members for the rendered problem (e.g. `stderr`, the tail of pi's stderr). */
	readonly extra: Readonly<Record<string, unknown>>;

	constructor(
		status: number,
		code: GatewayErrorCode | (string & {}),
		detail: string,
		extra: Readonly<Record<string, unknown>> = {},
	) {
		super(detail);
		this.status = status;
		this.code = code;
		this.extra = extra;
	}
}

/** The codes the domain raises today (HTTP adds its own: invalid_input, unauthorized…). */
export type GatewayErrorCode =
	| "agent_busy"
	| "approval_already_answered"
	| "approval_answer_mismatch"
	| "approval_gone"
	| "approval_not_found"
	| "database_unavailable"
	| "node_lost"
	| "owner_unreachable"
	| "extension_not_allowed"
	| "image_too_large"
	| "too_many_images"
	| "insufficient_storage"
	| "not_resumable"
	| "path_not_allowed"
	| "egress_not_allowed"
	| "egress_entry_invalid"
	| "path_not_found"
	| "path_outside_root"
	| "pi_answer_too_large"
	| "pi_crashed"
	| "pi_exited"
	| "pi_refused"
	| "pi_spawn_failed"
	| "pi_start_failed"
	| "pi_timeout"
	| "prompt_is_a_path"
	| "queue_full"
	| "run_cancelled"
	| "run_not_active"
	| "run_not_found"
	| "session_deleted"
	| "session_file_in_use"
	| "resume_ambiguous"
	| "webhook_not_found"
	| "too_many_webhooks"
	| "webhook_destination_refused"
	| "webhook_static"
	| "delivery_not_found"
	| "delivery_pending"
	| "session_file_missing"
	| "session_gone"
	| "session_not_found"
	| "session_stopped"
	| "shutting_down"
	| "sandbox_unavailable"
	| "too_many_live_sessions"
	| "too_many_sessions";
