import type { DatabaseSync } from "node:sqlite";
import { shareOf } from "../../config/config.ts";
import type { Delivery, DeliveryAttempt, Webhook, WebhookEventType } from "../../webhooks/schemas.ts";
import type { StoredWebhook, WebhookStore } from "../../webhooks/store.ts";
import { FairShare } from "./fair-share.ts";
import { migrate } from "./migrations.ts";
import { accessTable, type CountedRows, webhookIndexes, webhookTables } from "./schema.ts";

/** Webhooks and their outbox live in gateway.db next to the session registry, in tables of their own. */

interface OutboxRow {
	id: string;
	principal: string;
	webhook_id: string;
	type: string;
	payload: string;
	state: string;
	attempts: number;
	next_at: number | null;
	created_at: string;
	log: string;
}

/** Attempts kept per delivery in its log. */
const keepAttempts = 20;

/** Waiting messages and the delivery log, each counted per webhook and principal (fair-share.ts). */
const pendingRows: CountedRows = {
	store: "outbox_pending",
	table: "webhook_outbox",
	scope: (row) => `${row}.webhook_id`,
	counted: (row) => `${row}.state = 'pending'`,
	state: true,
};
const settledRows: CountedRows = {
	...pendingRows,
	store: "outbox_settled",
	counted: (row) => `${row}.state != 'pending'`,
};

/**
 * Whose share a message counts in: the owner of the session it is about (session_access, in the same
 * gateway.db: the node that runs a session holds its record), else the admin's, as SessionAccess
 * says of a session without a record. Cluster mode: an adopted message brings its principal along.
 */
const ownerOf = "COALESCE(?, (SELECT owner FROM session_access WHERE session_id = ?), 'admin')";

/** The session a message is about (every message's data names it); null for one that does not parse. */
function sessionOf(payload: unknown): string | null {
	try {
		const data = (typeof payload === "string" ? JSON.parse(payload) : payload)?.data;
		return typeof data?.sessionId === "string" ? data.sessionId : null;
	} catch {
		return null;
	}
}

/** Fills the principal column of an outbox from before it (added in place: rows and their ids stay). */
function addPrincipal(db: DatabaseSync): void {
	const columns = db.prepare("SELECT name FROM pragma_table_info('webhook_outbox')").all() as { name: string }[];
	if (columns.some((c) => c.name === "principal")) return;
	migrate(db, "webhook_outbox.principal", () => {
		db.exec("ALTER TABLE webhook_outbox ADD COLUMN principal TEXT NOT NULL DEFAULT 'admin'");
		db.exec(`UPDATE webhook_outbox SET principal = COALESCE((SELECT owner FROM session_access WHERE session_id =
			CASE WHEN json_valid(webhook_outbox.payload) THEN json_extract(webhook_outbox.payload, '$.data.sessionId') END), 'admin')`);
	});
}

/**
 * Plain SQL over the open gateway.db handle; every call is synchronous and small. The outbox is
 * shared by the principals whose sessions' events a webhook receives, so it keeps fair shares per
 * webhook: a principal's waiting messages up to `pendingShare`, then its own oldest are dropped;
 * past the webhook's cap the principal with the most waiting loses its oldest; due messages are
 * taken a principal at a time, so one principal's backlog never holds another's back. The delivery
 * log is bounded the same way (a tenth of what a webhook keeps per principal).
 */
export class SqliteWebhookStore implements WebhookStore {
	readonly #db: DatabaseSync;
	/** Undelivered messages per principal per webhook; by default a tenth of the cap given to enqueue. */
	readonly #pendingShare: number | undefined;
	readonly #pending: FairShare;
	readonly #settled: FairShare;

	constructor(db: DatabaseSync, pendingShare?: number) {
		this.#db = db;
		this.#pendingShare = pendingShare;
		db.exec(accessTable);
		db.exec(webhookTables);
		addPrincipal(db);
		db.exec(webhookIndexes);
		this.#pending = new FairShare(db, pendingRows);
		this.#settled = new FairShare(db, settledRows);
	}

	get open(): boolean {
		return this.#db.isOpen;
	}

	list(): StoredWebhook[] {
		const rows = this.#db.prepare("SELECT record, secret FROM webhooks").all() as { record: string; secret: string }[];
		return rows
			.map((r) => ({ ...(JSON.parse(r.record) as Webhook), secret: r.secret }))
			.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
	}

	put(webhook: StoredWebhook): void {
		const { secret, ...record } = webhook;
		this.#db
			.prepare("INSERT OR REPLACE INTO webhooks (id, record, secret) VALUES (?, ?, ?)")
			.run(webhook.id, JSON.stringify(record), secret);
	}

	remove(id: string): void {
		this.#db.prepare("DELETE FROM webhooks WHERE id = ?").run(id);
		this.#db.prepare("DELETE FROM webhook_outbox WHERE webhook_id = ?").run(id);
	}

	/**
	 * Queues one message for one webhook. Past its principal's share, or past `maxPending` waiting
	 * messages of the webhook, the oldest of that principal, or of the one with the most waiting, are
	 * dropped (kept in the log as `dropped`), so a dead endpoint holds a bounded number of rows and
	 * one principal's sessions never push another's messages out. Returns the ids of those dropped.
	 */
	enqueue(
		webhookId: string,
		message: { id: string; type: WebhookEventType; payload: string; createdAt: string },
		maxPending: number,
	): string[] {
		const [queued] = this.#db
			.prepare(
				`INSERT INTO webhook_outbox (id, webhook_id, type, payload, state, attempts, next_at, created_at, log, principal)
				VALUES (?, ?, ?, ?, 'pending', 0, ?, ?, '[]', ${ownerOf}) RETURNING principal`,
			)
			.all(
				message.id,
				webhookId,
				message.type,
				message.payload,
				Date.now(),
				message.createdAt,
				null,
				sessionOf(message.payload),
			) as { principal: string }[];
		const drop = this.#db.prepare(
			`UPDATE webhook_outbox SET state = 'dropped', next_at = NULL WHERE rowid IN (
				SELECT rowid FROM webhook_outbox WHERE webhook_id = ? AND principal = ? AND state = 'pending' ORDER BY created_at, rowid LIMIT ?)
			RETURNING id`,
		);
		const dropped: string[] = [];
		const evict = (principal: string, n: number) => {
			const rows = drop.all(webhookId, principal, n) as { id: string }[];
			dropped.push(...rows.map((r) => r.id));
			return rows.length;
		};
		const share = this.#pendingShare ?? shareOf(maxPending);
		this.#pending.trim(webhookId, share, maxPending, evict, queued?.principal);
		return dropped;
	}

	/**
	 * A pending message another node held (cluster mode), queued here as it was: attempts, log and
	 * next attempt kept, and its principal when the cluster's record names it (a field beside the
	 * Delivery's, src/store/postgres/webhook-outbox.ts). Not trimmed here: what it drops would stay
	 * this node's in the cluster's record; the next enqueue trims.
	 */
	adopt(delivery: Delivery & { principal?: string }): void {
		const nextAt = delivery.nextAttemptAt === null ? Date.now() : Date.parse(delivery.nextAttemptAt);
		const payload = JSON.stringify(delivery.payload);
		// An upsert, not a REPLACE: the counts' triggers see a row changed, not one deleted unseen.
		this.#db
			.prepare(
				`INSERT INTO webhook_outbox (id, webhook_id, type, payload, state, attempts, next_at, created_at, log, principal)
				VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?, ${ownerOf})
				ON CONFLICT (webhook_id, id) DO UPDATE SET type = excluded.type, payload = excluded.payload, state = 'pending',
					attempts = excluded.attempts, next_at = excluded.next_at, created_at = excluded.created_at, log = excluded.log`,
			)
			.run(
				delivery.id,
				delivery.webhookId,
				delivery.type,
				payload,
				delivery.attempts,
				nextAt,
				delivery.createdAt,
				JSON.stringify(delivery.log),
				delivery.principal ?? null,
				sessionOf(delivery.payload),
			);
	}

	/** Forgets a message here (another node adopted it and answers for it now). */
	discard(webhookId: string, id: string): void {
		this.#db.prepare("DELETE FROM webhook_outbox WHERE webhook_id = ? AND id = ?").run(webhookId, id);
	}

	/**
	 * Settled rows beyond `keep` per webhook are forgotten with fair shares: each principal's beyond a
	 * tenth of `keep`, then the oldest of the principal holding the most.
	 */
	prune(webhookId: string, keep: number): void {
		const forget = this.#db.prepare(
			`DELETE FROM webhook_outbox WHERE rowid IN (
				SELECT rowid FROM webhook_outbox WHERE webhook_id = ? AND principal = ? AND state != 'pending' ORDER BY created_at, rowid LIMIT ?)`,
		);
		this.#settled.trim(webhookId, shareOf(keep), keep, (principal, n) =>
			Number(forget.run(webhookId, principal, n).changes),
		);
	}

	/**
	 * Pending messages whose time has come, a principal at a time: each principal's oldest due, then
	 * each one's second, and so on (those in flight are still pending, so they hold their places), so
	 * one principal's backlog never keeps another's messages waiting. One index walk per principal
	 * with messages waiting, `limit` rows each at most.
	 */
	due(now: number, limit: number): Delivery[] {
		const principals = this.#db
			.prepare(
				`WITH RECURSIVE p(principal) AS (
					SELECT MIN(principal) FROM webhook_outbox WHERE state = 'pending'
					UNION ALL
					SELECT (SELECT MIN(principal) FROM webhook_outbox WHERE state = 'pending' AND principal > p.principal)
					FROM p WHERE p.principal IS NOT NULL)
				SELECT principal FROM p WHERE principal IS NOT NULL`,
			)
			.all() as { principal: string }[];
		const of = this.#db.prepare(
			"SELECT * FROM webhook_outbox WHERE state = 'pending' AND principal = ? AND next_at <= ? ORDER BY next_at, rowid LIMIT ?",
		);
		const ranked = principals.flatMap(({ principal }) =>
			(of.all(principal, now, limit) as unknown as OutboxRow[]).map((row, rank) => ({ row, rank })),
		);
		ranked.sort((a, b) => a.rank - b.rank || (a.row.next_at ?? 0) - (b.row.next_at ?? 0));
		return ranked.slice(0, limit).map(({ row }) => toDelivery(row));
	}

	/** Every pending message (cluster mode records them for the cluster when the node starts). */
	pending(): Delivery[] {
		const rows = this.#db
			.prepare("SELECT * FROM webhook_outbox WHERE state = 'pending' ORDER BY rowid")
			.all() as unknown as OutboxRow[];
		return rows.map(toDelivery);
	}

	/** The earliest next attempt, to sleep until then. */
	nextDue(): number | undefined {
		const row = this.#db.prepare("SELECT MIN(next_at) AS at FROM webhook_outbox WHERE state = 'pending'").get() as {
			at: number | null;
		};
		return row.at ?? undefined;
	}

	get(webhookId: string, id: string): Delivery | undefined {
		const row = this.#db
			.prepare("SELECT * FROM webhook_outbox WHERE webhook_id = ? AND id = ?")
			.get(webhookId, id) as unknown as OutboxRow | undefined;
		return row && toDelivery(row);
	}

	deliveries(webhookId: string, limit: number): Delivery[] {
		const rows = this.#db
			.prepare("SELECT * FROM webhook_outbox WHERE webhook_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ?")
			.all(webhookId, limit) as unknown as OutboxRow[];
		return rows.map(toDelivery);
	}

	/** Records an attempt and the state it leads to (`nextAt` for another try). */
	settle(delivery: Delivery, attempt: DeliveryAttempt, state: Delivery["state"], nextAt: number | null): void {
		const log = [...delivery.log, attempt].slice(-keepAttempts);
		this.#db
			.prepare(
				"UPDATE webhook_outbox SET state = ?, attempts = ?, next_at = ?, log = ? WHERE webhook_id = ? AND id = ?",
			)
			.run(state, delivery.attempts + 1, nextAt, JSON.stringify(log), delivery.webhookId, delivery.id);
	}

	/** A manual redelivery: pending again now, with a fresh attempt budget and its log kept. */
	requeue(webhookId: string, id: string): void {
		this.#db
			.prepare("UPDATE webhook_outbox SET state = 'pending', attempts = 0, next_at = ? WHERE webhook_id = ? AND id = ?")
			.run(Date.now(), webhookId, id);
	}
}

function toDelivery(row: OutboxRow): Delivery {
	return {
		id: row.id,
		webhookId: row.webhook_id,
		type: row.type as WebhookEventType,
		state: row.state as Delivery["state"],
		attempts: row.attempts,
		nextAttemptAt: row.state === "pending" && row.next_at !== null ? new Date(row.next_at).toISOString() : null,
		createdAt: row.created_at,
		payload: JSON.parse(row.payload) as Record<string, unknown>,
		log: JSON.parse(row.log) as DeliveryAttempt[],
	};
}
