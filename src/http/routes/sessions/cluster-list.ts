import type { Cluster } from "../../../cluster/cluster.ts";
import type { RowQuery } from "../../../cluster/cluster-store.ts";
import { parseStoredRecord } from "../../../sessions/registry/index.ts";
import { mayAccessRecord } from "../../auth/ownership.ts";
import { hasScope, type Principal } from "../../auth/principals.ts";
import { decodeCursor, pageOfViews, type SessionList, type SessionListQuery } from "./session-page.ts";
import { type SessionView, storedViewOf } from "./session-view.ts";

/**
 * One page of the cluster's sessions, as one node sees them: its own (`local`: candidates already
 * filtered and past the cursor), each live node's own first page past the same cursor (asked with
 * the caller's credentials and filters, so each filters as it would), and the stored records of
 * the rest (stopped, or of a node not asked), read a page at a time in the database. Each source is in
 * the same order, so the first `limit` of their union is the cluster's page. A session of a node
 * that did not answer is shown from its record too, rather than left out.
 */
export async function clusterSessions(
	cluster: Cluster,
	local: SessionView[],
	principal: Principal | undefined,
	authorization: string | null,
	query: SessionListQuery,
): Promise<SessionList> {
	const search = new URLSearchParams();
	for (const [name, value] of Object.entries(query)) if (value !== undefined) search.set(name, String(value));
	// A stored session is stopped and runs on no node: a filter for another status or a node excludes it.
	const stored = (query.status === undefined || query.status === "stopped") && query.node === undefined;
	// The nodes asked (this one and those fanOut reaches) list their own; every other row is read here.
	const asked = [cluster.node, ...cluster.nodes.filter((n) => n.alive && n.id !== cluster.node).map((n) => n.id)];
	const [remote, unheld] = await Promise.all([
		cluster.fanOut<Partial<SessionList>>(`/v1/sessions?${search}`, authorization),
		stored ? storedViews(cluster, principal, query, { notIn: asked }) : [],
	]);
	const views = new Map(local.map((v) => [v.id, v]));
	let more = false;
	for (const page of remote.results) {
		for (const view of page.sessions ?? []) if (!views.has(view.id)) views.set(view.id, view);
		more ||= page.hasMore === true;
	}
	const held =
		stored && remote.missing.length > 0 ? await storedViews(cluster, principal, query, { in: remote.missing }) : [];
	for (const view of [...unheld, ...held]) if (!views.has(view.id)) views.set(view.id, view);
	return pageOfViews(views.values(), query.limit, more);
}

/**
 * Up to `limit + 1` stored sessions the caller may read, past the cursor: batches from the
 * database until enough pass the access check (all do for an admin: one batch).
 */
async function storedViews(
	cluster: Cluster,
	principal: Principal | undefined,
	query: SessionListQuery,
	owners: RowQuery["owners"],
): Promise<SessionView[]> {
	const views: SessionView[] = [];
	const wanted = query.limit + 1;
	const everything = !principal || hasScope(principal, "admin");
	const batch: RowQuery = { owners, principal: query.principal, after: decodeCursor(query.cursor), limit: wanted };
	for (;;) {
		const rows = await cluster.storedRows(batch);
		for (const row of rows) {
			const parsed = parseStoredRecord(row);
			if ("skip" in parsed) continue;
			const access = {
				sessionId: row.id,
				owner: row.access_owner ?? "admin",
				grants: row.access_grants ? JSON.parse(row.access_grants) : [],
			};
			if (!everything && principal && !mayAccessRecord(access, principal, "sessions:read")) continue;
			views.push(storedViewOf(parsed.record));
			if (views.length === wanted) return views;
		}
		const last = rows.at(-1);
		if (!last || rows.length < batch.limit) return views;
		batch.after = { createdAt: last.created_at, id: last.id };
		batch.limit = Math.min(batch.limit * 4, 2000);
	}
}
