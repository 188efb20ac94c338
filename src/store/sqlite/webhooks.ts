import type { DatabaseSync } from "node:sqlite";
import type { Delivery, DeliveryAttempt, Webhook, WebhookEventType } from "../../webhooks/schemas.ts";
import type { StoredWebhook, WebhookStore } from "../../webhooks/store.ts";
import { webhookTables } from "./schema.ts";

/** Webhooks and their outbox live in gateway.db next to the session registry, in tables of their own. */

interface OutboxRow {
	id: string;
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

/** Plain SQL over the open gateway.db handle; every call is synchronous and small. */
export class SqliteWebhookStore implements WebhookStore {
	readonly #db: DatabaseSync;

	constructor(db: DatabaseSync) {
		this.#db = db;
		this.#db.exec(webhookTables);
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
	 * Queues one message for one webhook. Past `maxPending` waiting messages the oldest are dropped
	 * (kept in the log as `dropped`), so a dead endpoint holds a bounded number of rows. Returns the
	 * ids of the messages dropped.
	 */
	enqueue(
		webhookId: string,
		message: { id: string; type: WebhookEventType; payload: string; createdAt: string },
		maxPending: number,
	): string[] {
		this.#db
			.prepare(
				"INSERT INTO webhook_outbox (id, webhook_id, type, payload, state, attempts, next_at, created_at, log) VALUES (?, ?, ?, ?, 'pending', 0, ?, ?, '[]')",
			)
			.run(message.id, webhookId, message.type, message.payload, Date.now(), message.createdAt);
		const dropped = this.#db
			.prepare(
				`UPDATE webhook_outbox SET state = 'dropped', next_at = NULL WHERE webhook_id = ? AND state = 'pending' AND rowid IN (
					SELECT rowid FROM webhook_outbox WHERE webhook_id = ? AND state = 'pending' ORDER BY created_at DESC, rowid DESC LIMIT -1 OFFSET ?)
				RETURNING id`,
			)
			.all(webhookId, webhookId, maxPending) as { id: string }[];
		return dropped.map((r) => r.id);
	}

	/** A pending message another node held (cluster mode), queued here as it was: attempts, log and next attempt kept. */
	adopt(delivery: Delivery): void {
		const nextAt = delivery.nextAttemptAt === null ? Date.now() : Date.parse(delivery.nextAttemptAt);
		this.#db
			.prepare(
				"INSERT OR REPLACE INTO webhook_outbox (id, webhook_id, type, payload, state, attempts, next_at, created_at, log) VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?)",
			)
			.run(
				delivery.id,
				delivery.webhookId,
				delivery.type,
				JSON.stringify(delivery.payload),
				delivery.attempts,
				nextAt,
				delivery.createdAt,
				JSON.stringify(delivery.log),
			);
	}

	/** Forgets a message here (another node adopted it and answers for it now). */
	discard(webhookId: string, id: string): void {
		this.#db.prepare("DELETE FROM webhook_outbox WHERE webhook_id = ? AND id = ?").run(webhookId, id);
	}

	/** Settled rows beyond `keep` per webhook are forgotten, oldest first. */
	prune(webhookId: string, keep: number): void {
		this.#db
			.prepare(
				`DELETE FROM webhook_outbox WHERE webhook_id = ? AND state != 'pending' AND rowid IN (
					SELECT rowid FROM webhook_outbox WHERE webhook_id = ? AND state != 'pending' ORDER BY created_at DESC, rowid DESC LIMIT -1 OFFSET ?)`,
			)
			.run(webhookId, webhookId, keep);
	}

	/** Pending messages whose time has come, oldest first. */
	due(now: number, limit: number): Delivery[] {
		const rows = this.#db
			.prepare("SELECT * FROM webhook_outbox WHERE state = 'pending' AND next_at <= ? ORDER BY next_at, rowid LIMIT ?")
			.all(now, limit) as unknown as OutboxRow[];
		return rows.map(toDelivery);
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
