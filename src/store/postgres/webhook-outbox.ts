import type pg from "pg";
import type { Delivery, DeliveryAttempt, WebhookEventType } from "../../webhooks/schemas.ts";
import type { DeliveryKey, SharedOutbox } from "../../webhooks/shared.ts";

interface Row {
	webhook_id: string;
	id: string;
	type: string;
	payload: string;
	attempts: number;
	next_at: string | null;
	created_at: string;
	log: string;
	principal: string | null;
}

/** The session a message is about (every message's data names it). */
function sessionOf(delivery: Delivery): string | null {
	const data = delivery.payload.data as { sessionId?: unknown } | undefined;
	return typeof data?.sessionId === "string" ? data.sessionId : null;
}

/** How long a settled row is kept: a node back from a long pause must still learn that its copy went elsewhere. */
const keepSettled = "1 day";

/**
 * The cluster's record of undelivered webhook messages (migration 7): one row per delivery, naming
 * the node that holds it. A node writes only rows it holds; a row whose node has no live lease is
 * adopted by a live node (the row lock makes one of them win). Settled rows stay a day as
 * tombstones, so a node that was paused past its lease finds that its copy was sent by another.
 *
 * Fair shares: a row names the principal that owns the message's session (migration 12; read from
 * the cluster's session_access as the message is first held), and an adopted message brings it along,
 * so the adopting node counts it in that principal's share of its outbox (../sqlite/webhooks.ts), not
 * in whatever its own copy of the owners says (it may never have run the session).
 */
export class PostgresOutbox implements SharedOutbox {
	readonly #pool: pg.Pool;
	readonly #node: string;
	#swept = 0;

	constructor(pool: pg.Pool, node: string) {
		this.#pool = pool;
		this.#node = node;
	}

	async hold(deliveries: Delivery[]): Promise<void> {
		for (const d of deliveries) {
			await this.#pool.query(
				`INSERT INTO webhook_outbox (webhook_id, id, node, state, type, payload, attempts, next_at, created_at, log, principal)
				 VALUES ($1, $2, $3, 'pending', $4, $5, $6, $7, $8, $9, (SELECT owner FROM session_access WHERE session_id = $10))
				 ON CONFLICT (webhook_id, id) DO UPDATE SET state = 'pending', attempts = EXCLUDED.attempts,
				   next_at = EXCLUDED.next_at, payload = EXCLUDED.payload, log = EXCLUDED.log, settled_at = NULL
				 WHERE webhook_outbox.node = $3`,
				[
					d.webhookId,
					d.id,
					this.#node,
					d.type,
					JSON.stringify(d.payload),
					d.attempts,
					d.nextAttemptAt === null ? null : Date.parse(d.nextAttemptAt),
					d.createdAt,
					JSON.stringify(d.log),
					sessionOf(d),
				],
			);
		}
	}

	async settle(keys: DeliveryKey[]): Promise<void> {
		for (const k of keys) {
			await this.#pool.query(
				// The tombstone keeps only who held it: the message itself is in the holder's delivery log.
				"UPDATE webhook_outbox SET state = 'done', settled_at = now(), payload = '{}', log = '[]' WHERE webhook_id = $1 AND id = $2 AND node = $3",
				[k.webhookId, k.id, this.#node],
			);
		}
	}

	async holder(key: DeliveryKey): Promise<"mine" | "elsewhere" | "unknown"> {
		const { rows } = await this.#pool.query<{ node: string }>(
			"SELECT node FROM webhook_outbox WHERE webhook_id = $1 AND id = $2",
			[key.webhookId, key.id],
		);
		const row = rows[0];
		if (!row) return "unknown";
		return row.node === this.#node ? "mine" : "elsewhere";
	}

	/** Each with `principal` beside the Delivery's fields when the record names one (see above). */
	async adoptOrphans(webhookIds: string[]): Promise<(Delivery & { principal?: string })[]> {
		if (webhookIds.length === 0) return [];
		// Tombstones older than a day go, once an hour per node rather than at every look.
		if (Date.now() - this.#swept > 3600_000) {
			this.#swept = Date.now();
			await this.#pool.query(
				`DELETE FROM webhook_outbox WHERE state = 'done' AND settled_at < now() - interval '${keepSettled}'`,
			);
		}
		// Only while this node's own lease holds: a node that lost it must not take anything.
		const { rows } = await this.#pool.query<Row>(
			`UPDATE webhook_outbox o SET node = $1
			 WHERE o.state = 'pending' AND o.node <> $1 AND o.webhook_id = ANY($2)
			   AND EXISTS (SELECT 1 FROM nodes me WHERE me.id = $1 AND me.lease_until > now())
			   AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = o.node AND n.lease_until > now())
			 RETURNING o.webhook_id, o.id, o.type, o.payload, o.attempts, o.next_at, o.created_at, o.log, o.principal`,
			[this.#node, webhookIds],
		);
		return rows.map((r) => ({
			id: r.id,
			webhookId: r.webhook_id,
			type: r.type as WebhookEventType,
			state: "pending",
			attempts: r.attempts,
			nextAttemptAt: r.next_at === null ? null : new Date(Number(r.next_at)).toISOString(),
			createdAt: r.created_at,
			payload: JSON.parse(r.payload) as Record<string, unknown>,
			log: JSON.parse(r.log) as DeliveryAttempt[],
			...(r.principal !== null && { principal: r.principal }),
		}));
	}

	async release(): Promise<void> {
		await this.#pool.query("UPDATE webhook_outbox SET node = '' WHERE node = $1 AND state = 'pending'", [this.#node]);
	}
}
