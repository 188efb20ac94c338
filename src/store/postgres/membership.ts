import type pg from "pg";
import type { MembershipStore, NodeIdentity, NodeRow } from "../../cluster/membership.ts";
import { transaction } from "./schema.ts";

/** The cluster's membership (src/cluster/membership.ts) in the `nodes` table. */
export class PostgresMembership implements MembershipStore {
	readonly #pool: pg.Pool;

	constructor(pool: pg.Pool) {
		this.#pool = pool;
	}

	async join(node: NodeIdentity): Promise<boolean> {
		return await transaction(this.#pool, async (client) => {
			const { rowCount } = await client.query(
				`INSERT INTO nodes (id, name, url, started_at, heartbeat_at, lease_until)
				 VALUES ($1, $1, $2, now(), now(), now() + make_interval(secs => $3))
				 ON CONFLICT (id) DO UPDATE SET url = EXCLUDED.url, started_at = now(), heartbeat_at = now(), lease_until = EXCLUDED.lease_until
				 WHERE nodes.lease_until <= now()`,
				[node.id, node.url, node.leaseTtlMs / 1000],
			);
			if (rowCount === 0) return false;
			await client.query("UPDATE sessions SET owner = NULL WHERE owner = $1", [node.id]);
			return true;
		});
	}

	async renew(node: NodeIdentity): Promise<boolean> {
		const { rowCount } = await this.#pool.query(
			`UPDATE nodes SET heartbeat_at = now(), lease_until = now() + make_interval(secs => $2)
			 WHERE id = $1 AND lease_until > now()`,
			[node.id, node.leaseTtlMs / 1000],
		);
		return rowCount === 1;
	}

	async nodes(): Promise<NodeRow[]> {
		const { rows } = await this.#pool.query<{
			id: string;
			url: string;
			started_at: Date;
			heartbeat_at: Date;
			alive: boolean;
			sessions: string;
		}>(
			`SELECT n.id, n.url, n.started_at, n.heartbeat_at, n.lease_until > now() AS alive,
			        (SELECT count(*) FROM sessions s WHERE s.owner = n.id) AS sessions
			 FROM nodes n WHERE n.lease_until > now() - interval '1 minute' ORDER BY n.id`,
		);
		return rows.map((r) => ({
			id: r.id,
			url: r.url,
			startedAt: r.started_at.toISOString(),
			heartbeatAt: r.heartbeat_at.toISOString(),
			alive: r.alive,
			sessions: Number(r.sessions),
		}));
	}
}
