import { pageOf } from "../../../sessions/dialogs/index.ts";
import { mayAccess } from "../../auth/ownership.ts";
import { createRouter } from "../../transport/openapi.ts";
import type { Deps } from "../deps.ts";
import { answerApproval, getApproval, inbox, sessionApprovals } from "./approvals.routes.ts";
import { approvalChange, clusterApprovals, clusterSeq } from "./inbox.ts";

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
			// Cluster mode: every node's, unless another node asks for this one's own; paged by a
			// cluster-wide order (nodes number their approvals each on their own).
			const node = cluster?.();
			const everywhere = node && !node.isForwarded(c.req.raw.headers) ? node : undefined;
			const query = new URLSearchParams({ limit: "500", ...(status && { status }) });
			const page = async () =>
				everywhere
					? pageOf(
							await clusterApprovals(
								everywhere,
								mine(),
								`/v1/approvals?${query}`,
								c.req.header("authorization") ?? null,
							),
							Number(cursor ?? 0),
							limit,
							clusterSeq,
						)
					: pageOf(mine(), Number(cursor ?? 0), limit);
			let result = await page();
			// Held until a matching approval shows (on any node): a change that matches nothing waits on.
			for (const deadline = Date.now() + (wait ?? 0) * 1000; result.approvals.length === 0; ) {
				const left = deadline - Date.now();
				if (left <= 0 || c.req.raw.signal.aborted) break;
				await approvalChange(registry, left, c.req.raw.signal, everywhere);
				result = await page();
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
		.openapi(answerApproval, (c) => {
			const { id, approvalId } = c.req.valid("param");
			const session = registry.get(id);
			const answer = c.req.valid("json");
			// Attributed to who is authenticated; the body's `by` stays as a free-text note.
			const principal = c.get("principal");
			const resolved = session.approvals.answer(approvalId, answer, principal?.anonymous ? undefined : principal?.name);
			if ("remember" in answer && answer.remember === "session") policies?.remember(session, approvalId, answer);
			return c.json(resolved, 200);
		});
}
