import { pageOf } from "../../../sessions/approvals.ts";
import type { SessionRegistry } from "../../../sessions/registry.ts";
import type { Deps } from "../../deps.ts";
import { createRouter } from "../../openapi.ts";
import { mayAccess } from "../../ownership.ts";
import { answerApproval, getApproval, inbox, sessionApprovals } from "./approvals.routes.ts";
import { clusterApprovalChange, clusterApprovals, clusterPageOf } from "./cluster-inbox.ts";

export function approvalsRouter({ registry, policies, access, cluster }: Deps) {
	return createRouter()
		.openapi(inbox, async (c) => {
			const { status, limit, cursor, wait } = c.req.valid("query");
			const principal = c.get("principal");
			// The inbox shows each principal the approvals it may see (its own sessions', and those shared with it).
			const mine = () =>
				registry
					.approvals(status)
					.filter((a) => !principal || mayAccess(access, principal, a.sessionId, "approvals:read"));
			const node = cluster?.();
			if (node && !node.isForwarded(c.req.raw.headers)) {
				const query = new URLSearchParams({ limit: "500", ...(status && { status }) });
				const everywhere = () =>
					clusterApprovals(node, mine(), `/v1/approvals?${query}`, c.req.header("authorization") ?? null);
				const page = async () => clusterPageOf(await everywhere(), Number(cursor ?? 0), limit);
				let result = await page();
				// Held until a matching approval shows anywhere, as on one node: a wake-up for another page waits on.
				for (const deadline = Date.now() + (wait ?? 0) * 1000; result.approvals.length === 0; ) {
					const left = deadline - Date.now();
					if (left <= 0 || c.req.raw.signal.aborted) break;
					await clusterApprovalChange(registry, node, left, c.req.raw.signal);
					result = await page();
				}
				return c.json(result, 200);
			}
			const page = () => pageOf(mine(), Number(cursor ?? 0), limit);
			let result = page();
			if (wait && result.approvals.length === 0) {
				await approvalChange(registry, wait * 1000, c.req.raw.signal, () => page().approvals.length > 0);
				result = page();
			}
			return c.json(result, 200);
		})
		.openapi(sessionApprovals, (c) => {
			const { status, limit, cursor } = c.req.valid("query");
			const session = registry.get(c.req.valid("param").id);
			return c.json(pageOf(session.approvals.list(status), Number(cursor ?? 0), limit), 200);
		})
		.openapi(getApproval, (c) => {
			const { id, approvalId } = c.req.valid("param");
			return c.json(registry.get(id).approvals.get(approvalId), 200);
		})
		.openapi(answerApproval, async (c) => {
			const { id, approvalId } = c.req.valid("param");
			const session = registry.get(id);
			const answer = c.req.valid("json");
			// Attributed to who is authenticated; the body's `by` stays as a free-text note.
			const principal = c.get("principal");
			const resolved = session.approvals.answer(approvalId, answer, principal?.anonymous ? undefined : principal?.name);
			if ("remember" in answer && answer.remember === "session") {
				policies?.remember(session, approvalId, answer);
				// Cluster mode: the rule is in the database before the answer is acknowledged.
				await registry.persisted();
			}
			return c.json(resolved, 200);
		});
}

/** Resolves once an approval opens or settles anywhere and `ready()` holds, after `ms`, or on abort. */
function approvalChange(registry: SessionRegistry, ms: number, signal: AbortSignal, ready: () => boolean) {
	return new Promise<void>((resolve) => {
		const done = () => {
			clearTimeout(timer);
			unsubscribe();
			signal.removeEventListener("abort", done);
			resolve();
		};
		const timer = setTimeout(done, ms);
		const unsubscribe = registry.subscribeAll((_sessionId, event) => {
			if ((event.type === "approval_requested" || event.type === "approval_resolved") && ready()) done();
		});
		signal.addEventListener("abort", done);
	});
}
