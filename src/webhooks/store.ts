import type { Delivery, DeliveryAttempt, Webhook, WebhookEventType } from "./schemas.ts";

export interface StoredWebhook extends Webhook {
	secret: string;
}

/**
 * What the webhook service keeps on the node's own disk: the definitions and the outbox. Declared
 * here, beside its one user, so the service does not depend on SQL; src/store/sqlite/webhooks.ts
 * implements it in gateway.db and the composition root (server.ts) hands it over. Every call is
 * synchronous: the event hub queues a message without awaiting anything.
 */
export interface WebhookStore {
	/** False once the database closed (shutdown): late events and timers do nothing. */
	readonly open: boolean;
	list(): StoredWebhook[];
	put(webhook: StoredWebhook): void;
	/** The webhook and its outbox. */
	remove(id: string): void;
	/**
	 * Queues one message for one webhook, in fair shares by the principal that owns its session: past
	 * that principal's share its own oldest waiting messages are dropped, past `maxPending` those of
	 * the principal with the most waiting (kept in the log as `dropped`). Returns the ids dropped.
	 */
	enqueue(
		webhookId: string,
		message: { id: string; type: WebhookEventType; payload: string; createdAt: string },
		maxPending: number,
	): string[];
	/** A pending message another node held (cluster mode), queued here as it was. */
	adopt(delivery: Delivery): void;
	/** Forgets a message here (another node adopted it and answers for it now). */
	discard(webhookId: string, id: string): void;
	/** Settled messages beyond `keep` per webhook are forgotten, oldest first, in fair shares as enqueue's. */
	prune(webhookId: string, keep: number): void;
	/** Pending messages whose time has come, a principal at a time (each one's oldest first). */
	due(now: number, limit: number): Delivery[];
	/** Every pending message. */
	pending(): Delivery[];
	/** The earliest next attempt, to sleep until then. */
	nextDue(): number | undefined;
	get(webhookId: string, id: string): Delivery | undefined;
	deliveries(webhookId: string, limit: number): Delivery[];
	/** Records an attempt and the state it leads to (`nextAt` for another try). */
	settle(delivery: Delivery, attempt: DeliveryAttempt, state: Delivery["state"], nextAt: number | null): void;
	/** A manual redelivery: pending again now, with a fresh attempt budget and its log kept. */
	requeue(webhookId: string, id: string): void;
}
