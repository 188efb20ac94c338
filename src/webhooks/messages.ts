import { eventJson, type LoggedEvent } from "../sessions/event-log.ts";
import type { WebhookEventType } from "./schemas.ts";

const sessionLinks = (sessionId: string) => ({ session: `/v1/sessions/${sessionId}` });

/**
 * What a webhook receiver is told of a session event: thin messages (ids, status, links), never a
 * dialog's text, a message's content or a secret. Stateful only for run.settled, which carries the
 * stop reason of the run's last assistant message.
 */
export class WebhookMessages {
	readonly #currentRunId: (sessionId: string) => string | undefined;
	/** The last assistant message's stopReason per session, for run.settled. */
	readonly #stopReasons = new Map<string, string>();

	constructor(currentRunId: (sessionId: string) => string | undefined) {
		this.#currentRunId = currentRunId;
	}

	of(sessionId: string, event: LoggedEvent): { type: WebhookEventType; data: Record<string, unknown> } | undefined {
		switch (event.type) {
			case "approval_requested":
			case "approval_resolved": {
				const { approval } = eventJson<{ approval: Record<string, string | null> }>(event);
				const resolved = event.type === "approval_resolved";
				return {
					type: resolved ? "approval.resolved" : "approval.requested",
					data: {
						sessionId,
						approvalId: approval.id,
						method: approval.method,
						status: approval.status,
						...(resolved ? { resolvedBy: approval.resolvedBy, resolvedAt: approval.resolvedAt } : {}),
						links: {
							...sessionLinks(sessionId),
							approval: `/v1/sessions/${sessionId}/approvals/${approval.id}`,
						},
					},
				};
			}
			case "message_end": {
				// Only the stop reason is kept; the message (which may hold anything) never leaves.
				const { message } = eventJson<{ message?: { role?: string; stopReason?: string } }>(event);
				if (message?.role === "assistant" && message.stopReason) this.#stopReasons.set(sessionId, message.stopReason);
				return undefined;
			}
			case "agent_settled": {
				const stopReason = this.#stopReasons.get(sessionId) ?? null;
				this.#stopReasons.delete(sessionId);
				return {
					type: "run.settled",
					data: {
						sessionId,
						runId: this.#currentRunId(sessionId) ?? null,
						stopReason,
						links: {
							...sessionLinks(sessionId),
							messages: `/v1/sessions/${sessionId}/messages`,
							lastAssistantText: `/v1/sessions/${sessionId}/last-assistant-text`,
						},
					},
				};
			}
			case "session_exit": {
				const exit = eventJson<{ code: number | null; signal: string | null; reason: string }>(event);
				this.#stopReasons.delete(sessionId);
				return {
					type: exit.reason === "crashed" ? "session.crashed" : "session.exited",
					data: {
						sessionId,
						reason: exit.reason,
						code: exit.code,
						signal: exit.signal,
						links: sessionLinks(sessionId),
					},
				};
			}
			default:
				return undefined;
		}
	}
}
