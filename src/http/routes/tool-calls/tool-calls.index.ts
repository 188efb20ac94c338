import type { Cluster } from "../../../cluster/cluster.ts";
import type { ToolCall } from "../../../sessions/dialogs/index.ts";
import type { SessionRegistry } from "../../../sessions/registry/index.ts";
import { mayAccess } from "../../auth/ownership.ts";
import { createRouter, invalid } from "../../transport/openapi.ts";
import { ApiError } from "../../transport/problem.ts";
import type { Deps } from "../deps.ts";
import { allToolCalls, answerToolCall, getToolCall, sessionToolCalls } from "./tool-calls.routes.ts";

const byCreation = (a: ToolCall, b: ToolCall) => Date.parse(a.createdAt) - Date.parse(b.createdAt);

export function toolCallsRouter({ registry, access, cluster }: Deps) {
	return createRouter()
		.openapi(allToolCalls, async (c) => {
			const { status, wait } = c.req.valid("query");
			const principal = c.get("principal");
			const mine = () =>
				registry
					.list()
					.filter((s) => !principal || mayAccess(access, principal, s.id, "sessions:read"))
					.flatMap((s) => s.toolCalls.list(status));
			// Cluster mode: every node's calls, unless another node asks for this one's own.
			const node = cluster?.();
			const everywhere = node && !node.isForwarded(c.req.raw.headers) ? node : undefined;
			const path = `/v1/tool-calls${status ? `?status=${status}` : ""}`;
			const read = async () => {
				const local = mine();
				if (!everywhere) return local;
				const remote = await everywhere.fanOut<{ toolCalls: ToolCall[] }>(path, c.req.header("authorization") ?? null);
				return [...local, ...remote.results.flatMap((page) => page.toolCalls)].sort(byCreation);
			};
			let toolCalls = await read();
			for (const deadline = Date.now() + (wait ?? 0) * 1000; toolCalls.length === 0; ) {
				const left = deadline - Date.now();
				if (left <= 0 || c.req.raw.signal.aborted) break;
				await toolCallChange(registry, undefined, left, c.req.raw.signal, everywhere);
				toolCalls = await read();
			}
			return c.json({ toolCalls }, 200);
		})
		.openapi(sessionToolCalls, async (c) => {
			const { status, wait } = c.req.valid("query");
			const id = c.req.valid("param").id;
			let toolCalls = registry.get(id).toolCalls.list(status);
			for (const deadline = Date.now() + (wait ?? 0) * 1000; toolCalls.length === 0; ) {
				const left = deadline - Date.now();
				if (left <= 0 || c.req.raw.signal.aborted) break;
				await toolCallChange(registry, id, left, c.req.raw.signal);
				toolCalls = registry.get(id).toolCalls.list(status);
			}
			return c.json({ toolCalls }, 200);
		})
		.openapi(getToolCall, (c) => {
			const { id, callId } = c.req.valid("param");
			return c.json(registry.get(id).toolCalls.get(callId), 200);
		})
		.openapi(
			answerToolCall,
			(c) => {
				const { id, callId } = c.req.valid("param");
				const principal = c.get("principal");
				const call = registry
					.get(id)
					.toolCalls.answer(callId, c.req.valid("json"), principal?.anonymous ? undefined : principal?.name);
				return c.json(call, 200);
			},
			// The contract's 422 for an answer of the wrong shape (a bad path is still 400).
			(result): undefined => {
				if (result.success) return;
				const problem = invalid(result.error.issues);
				if (result.target !== "json") throw problem;
				throw new ApiError(422, "invalid_tool_call_answer", problem.message, { issues: problem.extra.issues });
			},
		);
}

/**
 * Resolves when a tool call opens or settles (in session `id`, or any), on this node or (cluster
 * mode, through the inbox notices) any other, after `ms`, or on abort. The caller reads again.
 */
function toolCallChange(
	registry: SessionRegistry,
	id: string | undefined,
	ms: number,
	signal: AbortSignal,
	cluster?: Cluster,
): Promise<void> {
	return new Promise<void>((resolve) => {
		const done = () => {
			clearTimeout(timer);
			unsubscribe();
			unnotice();
			signal.removeEventListener("abort", done);
			resolve();
		};
		const timer = setTimeout(done, ms);
		const unsubscribe = registry.subscribeAll((sessionId, event) => {
			if (id !== undefined && sessionId !== id) return;
			// session_exit too: the session's list will not change any more, and a deleted one answers 404.
			if (event.type === "tool_call_requested" || event.type === "tool_call_resolved" || event.type === "session_exit")
				done();
		});
		const unnotice =
			cluster?.onNotice((notice) => {
				if (notice.type === "approvals") done();
			}) ?? (() => {});
		signal.addEventListener("abort", done);
	});
}
