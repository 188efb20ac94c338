import { eventJson, type LoggedEvent } from "../events/event-log.ts";

export type Usage = Record<string, unknown> | undefined;

/**
 * The usage pi reports for a model call, by the event that carries it (issue 41 item 4): an
 * assistant message's (every turn: repair turns, client-tool rounds, retried attempts), a tool
 * result's (the model calls a tool made, as pi's stats count them), a compaction's (manual or pi's
 * own: its summary requests) and a usage entry's (pi's cache warming). What pi reports in no event
 * is not here (docs/limits.md).
 */
/** The `usage` an event reports for model calls (undefined for one that reports none); throws on bad JSON. */
export function reportedUsage(event: LoggedEvent): Usage {
	if (event.type === "message_end") {
		const { message } = eventJson<{ message?: { role?: string; usage?: Usage } }>(event);
		return message?.role === "assistant" || message?.role === "toolResult" ? message.usage : undefined;
	}
	if (event.type === "compaction_end") return eventJson<{ result?: { usage?: Usage } }>(event).result?.usage;
	if (event.type === "entry_appended") {
		const { entry } = eventJson<{ entry?: { type?: string; usage?: Usage } }>(event);
		return entry?.type === "usage" ? entry.usage : undefined;
	}
	return undefined;
}

/** Tokens and cost of the model calls an event reports (zero for an event that reports none). */
export function usageOf(event: LoggedEvent): { tokens: number; costUsd: number } {
	const none = { tokens: 0, costUsd: 0 };
	if (event.type !== "message_end" && event.type !== "compaction_end" && event.type !== "entry_appended") return none;
	try {
		const usage = reportedUsage(event);
		if (!usage || typeof usage !== "object") return none;
		const n = (value: unknown) => (typeof value === "number" && Number.isFinite(value) && value > 0 ? value : 0);
		const parts = n(usage.input) + n(usage.output) + n(usage.cacheRead) + n(usage.cacheWrite);
		const cost = usage.cost as { total?: unknown } | undefined;
		return { tokens: n(usage.totalTokens) || parts, costUsd: n(cost?.total) };
	} catch {
		return none;
	}
}
