import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { EventStream, PiGateway } from "../../../client/index.ts";
import { gatewayAs } from "./as-caller.ts";
import { follow, newRun, type RunEnd, type RunSoFar } from "./run-follow.ts";
import { answer, type Extra, failure, progressOf, remember, type ToolContext } from "./tool-context.ts";

/**
 * A call waits this long by default, then answers `running` (wait_for_run goes on): under the
 * 60 s most MCP clients give a call (the SDK's request timeout, Codex's tool_timeout_sec).
 */
const defaultWaitSeconds = 50;

const sessionId = z.string().min(1).max(200).describe("The session's id (ses_…), from start_session");

/** prompt and wait_for_run: a run followed to its end, with progress notifications on the way. */
export function registerRunTools(server: McpServer, ctx: ToolContext): void {
	const waitSeconds = z
		.number()
		.int()
		.min(1)
		.max(Math.max(1, Math.floor(ctx.maxWaitMs / 1000)))
		.optional()
		.describe(
			`How long to wait for the run before answering status "running" (default ${defaultWaitSeconds}); wait_for_run goes on`,
		);
	server.registerTool(
		"prompt",
		{
			title: "Prompt a session and wait for the run",
			description:
				'Sends a message to a pi session (a coding agent with tools in its own folder) and waits for the run it starts: the answer has the agent\'s last text, its stop reason, token usage and the tools it ran. Progress notifications say what it does meanwhile. Status "awaiting_approval": a dialog (a permission gate, say) waits for an answer; answer it with answer_approval, then call wait_for_run. Status "running": the wait ran out; call wait_for_run. Fails while another run of the session is going on. Cancelling the call aborts the run.',
			inputSchema: {
				sessionId,
				message: z.string().min(1).describe("What to ask the agent"),
				waitSeconds,
			},
			annotations: { destructiveHint: true, openWorldHint: true },
		},
		(args, extra) =>
			ctx.busy(() =>
				runCall(ctx, extra, newRun(args.sessionId), args.waitSeconds, (gw, signal) =>
					gw.promptStream(args.sessionId, { message: args.message }, { signal }),
				),
			),
	);
	server.registerTool(
		"wait_for_run",
		{
			title: "Wait for a run",
			description:
				'Goes on waiting for a run that prompt (or an earlier wait_for_run) of this MCP session left "awaiting_approval" or "running", with progress notifications, and answers as prompt does.',
			inputSchema: { sessionId, runId: z.string().min(1).max(200).describe("The run's id, from prompt"), waitSeconds },
			annotations: { readOnlyHint: true, openWorldHint: true },
		},
		(args, extra) =>
			ctx.busy(async () => {
				const run = ctx.runs.get(args.runId);
				if (!run || run.sessionId !== args.sessionId)
					return failure(
						`404 run_not_found: no run ${args.runId} of session ${args.sessionId} waits in this MCP session (only runs its prompt left waiting; GET /v1/sessions/{id}/changes?runId= and the session's events have every run)`,
					);
				return runCall(ctx, extra, run, args.waitSeconds, (gw, signal) =>
					gw.events(run.sessionId, { after: run.after, signal }),
				);
			}),
	);
}

/**
 * Follows a run until it ends, needs an answer, or `waitSeconds` pass; remembers it in the last two
 * cases. A call the client cancels (or whose MCP session ends) aborts the run it follows.
 */
async function runCall(
	ctx: ToolContext,
	extra: Extra,
	run: RunSoFar,
	waitSeconds: number | undefined,
	open: (gw: PiGateway, signal: AbortSignal) => EventStream,
): Promise<CallToolResult> {
	const gw = gatewayAs(ctx.app, extra.authInfo);
	const controller = new AbortController();
	const waitedOut = new Error("The wait ran out");
	const timer = setTimeout(
		() => controller.abort(waitedOut),
		Math.min((waitSeconds ?? defaultWaitSeconds) * 1000, ctx.maxWaitMs),
	);
	const cancel = () => controller.abort(extra.signal.reason);
	extra.signal.addEventListener("abort", cancel, { once: true });
	if (extra.signal.aborted) cancel();
	try {
		const end = await follow(gw, open(gw, controller.signal), run, progressOf(extra));
		if (end.status === "awaiting_approval") remember(ctx, run);
		else if (run.runId) ctx.runs.delete(run.runId);
		return result(run, end);
	} catch (error) {
		if (controller.signal.reason === waitedOut) {
			remember(ctx, run);
			return result(run, { status: "running" });
		}
		if (extra.signal.aborted && run.runId) await gw.abort(run.sessionId).catch(() => {});
		return failure(error);
	} finally {
		clearTimeout(timer);
		extra.signal.removeEventListener("abort", cancel);
	}
}

const next: Record<string, string> = {
	awaiting_approval:
		"A dialog waits for an answer: answer it with answer_approval (its id and options are in approvals), then call wait_for_run with this sessionId and runId.",
	running: "The run is still going: call wait_for_run with this sessionId and runId.",
};

function result(run: RunSoFar, end: RunEnd | { status: "running" }): CallToolResult {
	const { after: _position, ...sofar } = run;
	const value: Record<string, unknown> = { ...sofar, status: end.status };
	if (end.status === "settled") value.aborted = end.aborted;
	if (end.status === "awaiting_approval") value.approvals = end.approvals;
	if (end.status === "failed") value.detail = end.detail;
	if (next[end.status]) value.next = next[end.status];
	return answer(value, end.status === "failed");
}
