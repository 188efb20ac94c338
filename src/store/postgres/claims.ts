import type pg from "pg";
import type { Claim } from "../../cluster/cluster-store.ts";
import type { Tombstone } from "../../sessions/registry/index.ts";
import { transaction } from "./schema.ts";

/**
 * Takes session `id` for `node` when no live node holds it, in one transaction (the row locked).
 * Says who holds it otherwise, or that it does not exist (with its tombstone, if it was buried).
 */
export async function claimSession(pool: pg.Pool, node: string, id: string): Promise<Claim> {
	const claim = await transaction(pool, async (client): Promise<Claim | undefined> => {
		const { rows } = await client.query<{
			record: string;
			owner: string | null;
			url: string | null;
			live: boolean | null;
			owner_grants: string | null;
			access_owner: string | null;
			rules: string | null;
		}>(
			`SELECT s.record, s.owner, n.url, n.lease_until > now() AS live, a.owner AS access_owner, a.grants AS owner_grants,
			        r.rules
			 FROM sessions s LEFT JOIN nodes n ON n.id = s.owner LEFT JOIN session_access a ON a.session_id = s.id
			 LEFT JOIN session_rules r ON r.session_id = s.id
			 WHERE s.id = $1 FOR UPDATE OF s`,
			[id],
		);
		const row = rows[0];
		if (!row) return undefined;
		if (row.owner && row.owner !== node && row.live && row.url) return { kind: "owned", node: row.owner, url: row.url };
		const taken = await client.query(
			`UPDATE sessions SET owner = $2, epoch = epoch + 1 WHERE id = $1
			 AND EXISTS (SELECT 1 FROM nodes WHERE id = $2 AND lease_until > now())`,
			[id, node],
		);
		if (taken.rowCount === 0) throw new Error("this node's lease has run out");
		const access =
			row.access_owner === null
				? undefined
				: { owner: row.access_owner, grants: JSON.parse(row.owner_grants ?? "[]") as unknown[] };
		// Released (owner NULL) means its last state was written; a dead owner may have gone further.
		return {
			kind: "claimed",
			row: { id, record: row.record },
			clean: row.owner === null || row.owner === node,
			access,
			...(row.rules !== null && { rules: row.rules }),
		};
	});
	if (claim) return claim;
	const gone = await pool.query<{ reason: Tombstone["reason"]; at: Date }>(
		"SELECT reason, at FROM gone WHERE id = $1",
		[id],
	);
	const t = gone.rows[0];
	return { kind: "absent", gone: t && { id, reason: t.reason, at: t.at.toISOString() } };
}

/**
 * What decides whether a caller may have session `id` claimed: its live owner, if any (then it is
 * not claimed but forwarded), and its access record (owner and grants; none: the admin's). Read
 * without a lock, before a claim; undefined when no such session is stored.
 */
export async function claimView(
	pool: pg.Pool,
	id: string,
): Promise<{ owner?: { node: string; url: string }; access: { owner: string; grants: unknown[] } } | undefined> {
	const { rows } = await pool.query<{
		owner: string | null;
		url: string | null;
		live: boolean | null;
		access_owner: string | null;
		grants: string | null;
	}>(
		`SELECT s.owner, n.url, n.lease_until > now() AS live, a.owner AS access_owner, a.grants
		 FROM sessions s LEFT JOIN nodes n ON n.id = s.owner LEFT JOIN session_access a ON a.session_id = s.id
		 WHERE s.id = $1`,
		[id],
	);
	const row = rows[0];
	if (!row) return undefined;
	const access = { owner: row.access_owner ?? "admin", grants: JSON.parse(row.grants ?? "[]") as unknown[] };
	return row.owner && row.live && row.url ? { owner: { node: row.owner, url: row.url }, access } : { access };
}

/**
 * Who runs session `id` now, read without a lock: enough to forward a request to a live owner,
 * the common case; anything else goes through claimSession.
 */
export async function ownerOf(pool: pg.Pool, id: string): Promise<{ node: string; url: string } | undefined> {
	const { rows } = await pool.query<{ owner: string; url: string }>(
		"SELECT s.owner, n.url FROM sessions s JOIN nodes n ON n.id = s.owner WHERE s.id = $1 AND n.lease_until > now()",
		[id],
	);
	const row = rows[0];
	return row && { node: row.owner, url: row.url };
}
