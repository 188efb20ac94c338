import { eventJson, type LoggedEvent } from "../sessions/events/index.ts";
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

	/**
	 * With workspace change tracking on, run.settled waits for the run's `run_changes` event (its
	 * folder's snapshot, a moment after agent_settled) so that it can name the changed paths.
	 */
	readonly #awaitChanges: boolean;
	readonly #settled = new Map<string, Record<string, unknown>>();

	constructor(currentRunId: (sessionId: string) => string | undefined, awaitChanges = false) {
		this.#currentRunId = currentRunId;
		this.#awaitChanges = awaitChanges;
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
			case "tool_call_requested":
			case "tool_call_resolved": {
				// Thin as the rest: ids, name and status, never the arguments or the output.
				const { toolCall } = eventJson<{ toolCall: Record<string, string | null> }>(event);
				const resolved = event.type === "tool_call_resolved";
				return {
					type: resolved ? "tool_call.resolved" : "tool_call.requested",
					data: {
						sessionId,
						toolCallId: toolCall.id,
						runId: toolCall.runId,
						name: toolCall.name,
						status: toolCall.status,
						...(resolved ? { resolvedBy: toolCall.resolvedBy, answeredAt: toolCall.answeredAt } : {}),
						links: {
							...sessionLinks(sessionId),
							toolCall: `/v1/sessions/${sessionId}/tool-calls/${encodeURIComponent(toolCall.id ?? "")}`,
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
				const runId = this.#currentRunId(sessionId) ?? null;
				const data = {
					sessionId,
					runId,
					stopReason,
					links: {
						...sessionLinks(sessionId),
						messages: `/v1/sessions/${sessionId}/messages`,
						lastAssistantText: `/v1/sessions/${sessionId}/last-assistant-text`,
						...(runId && { changes: `/v1/sessions/${sessionId}/changes?runId=${runId}` }),
					},
				};
				// A run the tracker knows (pi said `started`) gets its run_changes; any other settles now.
				if (this.#awaitChanges && runId) {
					// Bounded: a run whose run_changes never came (its session deleted mid-snapshot) is forgotten in time.
					if (this.#settled.size >= 1000) this.#settled.delete(this.#settled.keys().next().value as string);
					this.#settled.set(`${sessionId}\0${runId}`, data);
					return undefined;
				}
				return { type: "run.settled", data };
			}
			case "run_changes": {
				const changes = eventJson<{ runId: string; files: unknown; truncated: boolean; unreadable?: string[] }>(event);
				const key = `${sessionId}\0${changes.runId}`;
				const data = this.#settled.get(key);
				this.#settled.delete(key);
				if (!data) return undefined;
				return {
					type: "run.settled",
					data: {
						...data,
						changes: {
							files: changes.files,
							truncated: changes.truncated,
							...(changes.unreadable && { unreadable: changes.unreadable }),
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
