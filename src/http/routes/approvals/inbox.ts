import type { Cluster } from "../../../cluster/cluster.ts";
import type { Approval } from "../../../sessions/dialogs/index.ts";
import type { SessionRegistry } from "../../../sessions/registry/index.ts";

/** This node's approvals (filtered already) and every other live node's, asked with the caller's credentials. */
export async function clusterApprovals(
	cluster: Cluster,
	local: Approval[],
	path: string,
	authorization: string | null,
): Promise<Approval[]> {
	const remote = await cluster.fanOut<{ approvals: Approval[] }>(path, authorization);
	return [...local, ...remote.results.flatMap((page) => page.approvals)];
}

/**
 * A cluster-wide position: nodes number their approvals each on their own, so the inbox orders
 * and pages by creation time (ms) with a tie-break every node computes the same from the id.
 */
export function clusterSeq(approval: Approval): number {
	let hash = 0;
	for (const ch of approval.id) hash = (hash * 31 + ch.charCodeAt(0)) % 1000;
	return Date.parse(approval.createdAt) * 1000 + hash;
}

/**
 * Resolves when an approval opens or settles on this node or (cluster mode) any other, through
 * LISTEN/NOTIFY, after `ms`, or on abort. The caller reads the inbox again: a wake-up with nothing
 * for it is cheap.
 */
export function approvalChange(registry: SessionRegistry, ms: number, signal: AbortSignal, cluster?: Cluster) {
	return new Promise<void>((resolve) => {
		const done = () => {
			clearTimeout(timer);
			unsubscribe();
			unnotice();
			signal.removeEventListener("abort", done);
			resolve();
		};
		const timer = setTimeout(done, ms);
		const unsubscribe = registry.subscribeAll((_sessionId, event) => {
			if (event.type === "approval_requested" || event.type === "approval_resolved") done();
		});
		const unnotice =
			cluster?.onNotice((notice) => {
				if (notice.type === "approvals") done();
			}) ?? (() => {});
		signal.addEventListener("abort", done);
	});
}
