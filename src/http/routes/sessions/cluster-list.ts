import type { Cluster } from "../../../cluster/cluster.ts";
import { parseStoredRecord } from "../../../sessions/records.ts";
import { mayAccessRecord } from "../../ownership.ts";
import type { Principal } from "../../principals.ts";
import { type SessionView, storedViewOf } from "./session-view.ts";

/**
 * Every session of the cluster, as one node sees them: its own (`local`, already filtered), each
 * live node's own (asked with the caller's credentials, so each filters as it would), and those
 * no live node holds, from their stored records (stopped; filtered here by the stored access).
 * A session of a node that did not answer is shown from its record too, rather than left out.
 */
export async function clusterSessions(
	cluster: Cluster,
	local: SessionView[],
	principal: Principal | undefined,
	authorization: string | null,
): Promise<SessionView[]> {
	const [rows, remote] = await Promise.all([
		cluster.listRows(),
		cluster.fanOut<{ sessions: SessionView[] }>("/v1/sessions", authorization),
	]);
	const views = new Map(local.map((v) => [v.id, v]));
	for (const page of remote.results)
		for (const view of page.sessions) if (!views.has(view.id)) views.set(view.id, view);
	const answered = new Set(cluster.nodes.filter((n) => n.alive && !remote.missing.includes(n.id)).map((n) => n.id));
	for (const row of rows) {
		if (views.has(row.id)) continue;
		// A live node that answered lists what this caller may see of its sessions; the rest is not for them.
		if (row.owner && row.live && answered.has(row.owner)) continue;
		const parsed = parseStoredRecord(row);
		if ("skip" in parsed) continue;
		const access = {
			sessionId: row.id,
			owner: row.access_owner ?? "admin",
			grants: row.access_grants ? JSON.parse(row.access_grants) : [],
		};
		if (principal && !mayAccessRecord(access, principal, "sessions:read")) continue;
		views.set(row.id, storedViewOf(parsed.record));
	}
	return [...views.values()].sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
}
