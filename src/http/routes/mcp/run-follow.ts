import type { EventStream, PiGateway, StreamEvent } from "../../../client/index.ts";

/** What a run said and did so far, folded from its events: what the prompt tool answers. */
export interface RunSoFar {
	sessionId: string;
	runId: string | null;
	/** Text of the last assistant message that had text (as the wait mode's `text`). */
	text: string | null;
	stopReason: string | null;
	usage: unknown;
	/** Tools the agent ran, in order (`bash: ls`, `write`). */
	tools: string[];
	output?: unknown;
	outputError?: unknown;
	limit?: unknown;
	/** The last event read: where following the run goes on. */
	after: number | undefined;
}

/** How following ended: the run settled, waits for a person, or cannot go on. */
export type RunEnd =
	| { status: "settled"; aborted: boolean }
	| { status: "awaiting_approval"; approvals: unknown[] }
	| { status: "failed"; detail: string };

type Event = { type: string; [key: string]: unknown };

/** Tells the caller what the run does (a progress notification). */
type Say = (message: string) => Promise<void>;

export const newRun = (sessionId: string): RunSoFar => ({
	sessionId,
	runId: null,
	text: null,
	stopReason: null,
	usage: null,
	tools: [],
	after: undefined,
});

/**
 * Reads `stream` (a prompt's run stream, or the session's events after `run.after`) into `run`,
 * telling `say` what happens, until the run settles, a dialog waits for an answer, or the run
 * cannot settle (pi refused the prompt, pi exited, the run was lost). Runs of one session never
 * overlap, so the first `agent_settled` after a position inside the run is its end.
 */
export async function follow(gw: PiGateway, stream: EventStream, run: RunSoFar, say: Say): Promise<RunEnd> {
	for await (const raw of stream) {
		const event = raw as StreamEvent & Event;
		run.after = stream.lastEventId ?? run.after;
		const end = fold(run, event);
		if (end) return end;
		if (event.type === "approval_requested") {
			const approval = event.approval as { id: string; title?: string };
			// A policy may have answered it already: only a dialog still pending stops following.
			if (await stillPending(gw, run.sessionId, approval.id)) {
				await say(`waiting for an answer: ${approval.title ?? approval.id}`);
				return { status: "awaiting_approval", approvals: await pendingOf(gw, run.sessionId, approval) };
			}
		}
		const note = noteOf(event);
		if (note) await say(note);
	}
	return { status: "failed", detail: "The session's event stream ended before the run did" };
}

/** Folds one event into `run`; the end it makes, if any. */
function fold(run: RunSoFar, e: Event): RunEnd | undefined {
	switch (e.type) {
		case "stream_open":
			if (typeof e.runId === "string") run.runId ??= e.runId;
			return undefined;
		case "response": {
			if (e.id !== run.runId) return undefined;
			if (e.success !== true) return { status: "failed", detail: `pi refused the prompt: ${String(e.error)}` };
			const disposition = (e.data as { disposition?: string } | undefined)?.disposition;
			return disposition === "handled" ? { status: "settled", aborted: false } : undefined;
		}
		case "message_end": {
			const message = e.message as { role?: string; content?: unknown; stopReason?: string; usage?: unknown };
			if (message?.role !== "assistant") return undefined;
			const text = textOf(message.content);
			if (text) run.text = text;
			run.stopReason = message.stopReason ?? null;
			run.usage = message.usage ?? null;
			return undefined;
		}
		case "tool_execution_start":
			run.tools.push(toolLine(e));
			return undefined;
		case "run_output":
			if ("output" in e) run.output = e.output;
			if ("error" in e) run.outputError = e.error;
			return undefined;
		case "run_limit_reached":
			run.limit = e.limit;
			return undefined;
		case "agent_settled":
			return { status: "settled", aborted: e.aborted === true };
		case "run_lost":
			return { status: "failed", detail: "The run was lost with the gateway or node that ran it" };
		case "session_exit":
			return { status: "failed", detail: "pi exited before the run settled" };
		default:
			return undefined;
	}
}

function noteOf(e: Event): string | undefined {
	if (e.type === "turn_start") return "the agent is working";
	if (e.type === "tool_execution_start") return `tool ${toolLine(e)}`;
	if (e.type === "approval_resolved") return "an approval was answered";
	if (e.type === "gap") return "some of the run's events are no longer in the session's log";
	if (e.type === "message_end") {
		const message = e.message as { role?: string; content?: unknown };
		const text = message?.role === "assistant" ? textOf(message.content) : null;
		return text ? `assistant: ${text.length > 200 ? `${text.slice(0, 200)}…` : text}` : undefined;
	}
	return undefined;
}

function toolLine(e: Event): string {
	const args = e.args as { command?: unknown; path?: unknown } | undefined;
	const detail = typeof args?.command === "string" ? args.command : typeof args?.path === "string" ? args.path : "";
	const line = detail ? `${String(e.toolName)}: ${detail}` : String(e.toolName);
	return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}

function textOf(content: unknown): string | null {
	if (typeof content === "string") return content || null;
	if (!Array.isArray(content)) return null;
	const text = content
		.filter((b): b is { type: "text"; text: string } => b?.type === "text" && typeof b.text === "string")
		.map((b) => b.text)
		.join("");
	return text || null;
}

async function stillPending(gw: PiGateway, sessionId: string, approvalId: string): Promise<boolean> {
	try {
		const approval = await gw.request("GET", "/v1/sessions/{id}/approvals/{approvalId}", {
			path: { id: sessionId, approvalId },
		});
		return approval.status === "pending";
	} catch {
		// Without approvals:read the caller cannot answer it either: say that it waits.
		return true;
	}
}

/** The session's pending dialogs (the one that stopped the run at least). */
async function pendingOf(gw: PiGateway, sessionId: string, first: unknown): Promise<unknown[]> {
	try {
		const page = await gw.request("GET", "/v1/sessions/{id}/approvals", {
			path: { id: sessionId },
			query: { status: "pending" },
		});
		return page.approvals.length > 0 ? page.approvals : [first];
	} catch {
		return [first];
	}
}
