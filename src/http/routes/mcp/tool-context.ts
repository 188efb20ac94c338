import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { CallToolResult, ServerNotification, ServerRequest } from "@modelcontextprotocol/sdk/types.js";
import { GatewayError } from "../../../client/index.ts";
import type { AppFetch } from "./as-caller.ts";
import type { RunSoFar } from "./run-follow.ts";

export type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** What the tools and resources of one MCP session share. */
export interface ToolContext {
	app: AppFetch;
	/** Runs this MCP session left waiting (for an answer, or past a call's wait), by run id: where each goes on. */
	runs: Map<string, RunSoFar>;
	/** The longest one call may wait for a run (--wait-timeout-ms). */
	maxWaitMs: number;
	/** Marks the MCP session busy while `work` runs (a busy session is never ended to make room). */
	busy<R>(work: () => Promise<R>): Promise<R>;
}

/** Runs remembered per MCP session at most: the oldest is forgotten first. */
const maxRuns = 100;

export function remember(ctx: ToolContext, run: RunSoFar): void {
	if (!run.runId) return;
	ctx.runs.delete(run.runId);
	ctx.runs.set(run.runId, run);
	while (ctx.runs.size > maxRuns) ctx.runs.delete(ctx.runs.keys().next().value as string);
}

/** A tool's answer: the value as JSON text (for every client) and as structured content. */
export function answer(value: Record<string, unknown>, isError = false): CallToolResult {
	return {
		content: [{ type: "text", text: JSON.stringify(value, null, 2) }],
		structuredContent: value,
		...(isError && { isError: true }),
	};
}

/**
 * A failed call as a tool error the model can read: the gateway's problem (status, code, detail),
 * so another principal's session reads exactly as one that does not exist.
 */
export function failure(error: unknown): CallToolResult {
	const text =
		error instanceof GatewayError
			? `${error.status} ${error.code}: ${error.detail}`
			: error instanceof Error
				? error.message
				: String(error);
	return { content: [{ type: "text", text }], isError: true };
}

/** Progress notifications for the request, when its caller asked for them (`_meta.progressToken`). */
export function progressOf(extra: Extra): (message: string) => Promise<void> {
	const progressToken = extra._meta?.progressToken;
	let progress = 0;
	return async (message) => {
		if (progressToken === undefined) return;
		progress++;
		await extra
			.sendNotification({ method: "notifications/progress", params: { progressToken, progress, message } })
			.catch(() => {});
	};
}
