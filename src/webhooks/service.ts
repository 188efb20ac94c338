// Over 300 lines on purpose: the outbox's life (enqueue, due rows, attempts, backoff, redelivery,
// and in cluster mode the record another node adopts from) is one loop over the same rows; the
// pieces with a job of their own are beside it (definitions.ts, handover.ts, sender.ts,
// messages.ts, destinations.ts, store.ts, shared.ts).
import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import { Webhook as Signer } from "standardwebhooks";
import type { LoggedEvent } from "../sessions/events/index.ts";
import { GatewayError } from "../shared/errors.ts";
import { fieldsOf, WebhookDefinitions } from "./definitions.ts";
import { DestinationError, type DestinationOptions, Destinations } from "./destinations.ts";
import { Handover } from "./handover.ts";
import { WebhookMessages } from "./messages.ts";
import type { CreateWebhookBody, Delivery, Webhook, WebhookEventType } from "./schemas.ts";
import { send } from "./sender.ts";
import type { SharedOutbox, SharedWebhooks } from "./shared.ts";
import type { StoredWebhook, WebhookStore } from "./store.ts";

export interface WebhookSettings {
	webhookAllow: string[];
	webhooksFile?: string;
	webhookTimeoutMs: number;
	webhookRetryBaseMs: number;
	webhookMaxAttempts: number;
	webhookConcurrency: number;
	maxWebhooks: number;
	webhookMaxPending: number;
	/** Workspace change tracking is on: run.settled waits for the run's run_changes (messages.ts). */
	workspaceChanges?: boolean;
	/** The resolver and interface list destinations are checked with (tests pass their own). */
	destinations?: DestinationOptions;
}

/** What the service needs of the session registry: its event hub and a session's current run. */
export interface EventSource {
	subscribeAll(listener: (sessionId: string, event: LoggedEvent) => void): () => void;
	currentRunId(sessionId: string): string | undefined;
}

/** The longest wait between two attempts. */
const maxDelayMs = 3600_000;
/** Settled deliveries kept per webhook for its delivery log. */
const keepSettled = 1000;

/**
 * Turns session events into webhook messages in a durable outbox (gateway.db) and delivers them,
 * signed per Standard Webhooks, with retries (exponential backoff with jitter) that survive a
 * restart. Bounded: pending rows per webhook, settled rows kept, concurrent requests, and each
 * request's time; the event hub only ever does a small synchronous insert.
 *
 * Cluster mode: the definitions are the cluster's (share(); see definitions.ts). The outbox stays
 * per node (a session's owner delivers its events), recorded for the cluster (handOver()) so that
 * the messages of a node that is gone are adopted and sent by another.
 */
export class WebhookService {
	readonly #settings: WebhookSettings;
	readonly #store: WebhookStore;
	readonly #source: EventSource;
	readonly #logger: Logger;
	readonly #destinations: Destinations;
	readonly #definitions: WebhookDefinitions;
	readonly #inFlight = new Set<string>();
	readonly #messages: WebhookMessages;
	#unsubscribe: (() => void) | undefined;
	#timer: NodeJS.Timeout | undefined;
	#stopped = true;
	#handover: Handover | undefined;

	constructor(settings: WebhookSettings, store: WebhookStore, source: EventSource, logger: Logger) {
		this.#settings = settings;
		this.#store = store;
		this.#source = source;
		this.#messages = new WebhookMessages((sessionId) => source.currentRunId(sessionId), settings.workspaceChanges);
		this.#logger = logger;
		this.#destinations = new Destinations(settings.webhookAllow, settings.destinations);
		this.#definitions = new WebhookDefinitions(store, logger, settings.webhooksFile);
	}

	start(): void {
		this.#stopped = false;
		this.#unsubscribe = this.#source.subscribeAll((sessionId, event) => this.#onEvent(sessionId, event));
		this.#arm(0);
	}

	/** Stops sending (pending rows stay in the outbox for the next start); still records events until the store closes. */
	stop(): void {
		this.#stopped = true;
		clearTimeout(this.#timer);
		this.#definitions.stop();
	}

	/**
	 * Cluster mode: the definitions made through the API are the cluster's, in `shared`; the copy
	 * here follows them (webhooks of --webhooks-file stay this node's own). Throws when they cannot
	 * be read, so a node does not start with the wrong ones.
	 */
	share(shared: SharedWebhooks): Promise<void> {
		return this.#definitions.share(shared);
	}

	/**
	 * Cluster mode: this node's undelivered messages are recorded in `outbox` (those already queued
	 * now, then each change), and every `everyMs` the messages of nodes that are gone are adopted here.
	 */
	handOver(outbox: SharedOutbox, everyMs: number): void {
		const handover = new Handover(outbox, this.#logger);
		this.#handover = handover;
		handover.held(this.#store.pending());
		handover.start(
			everyMs,
			async () => {
				await this.#definitions.fresh();
				return this.#definitions.all().map((hook) => hook.id);
			},
			(deliveries) => {
				if (!this.#store.open) return;
				for (const delivery of deliveries) this.#store.adopt(delivery);
				this.#arm(0);
			},
		);
	}

	/** A stopping node (after detach()): its undelivered messages are given up for the other nodes to adopt. */
	async release(): Promise<void> {
		await this.#handover?.release();
	}

	/** Reads the shared definitions again (another node changed them) and applies them here. */
	reload(): Promise<void> {
		return this.#definitions.reload();
	}

	/** After the store closed: no more recording either. */
	detach(): void {
		this.stop();
		this.#unsubscribe?.();
	}

	async list(): Promise<Webhook[]> {
		await this.#definitions.fresh();
		return this.#definitions
			.all()
			.map(publicView)
			.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
	}

	async get(id: string): Promise<Webhook> {
		await this.#definitions.fresh();
		return publicView(this.#definitions.require(id));
	}

	async create(body: CreateWebhookBody): Promise<StoredWebhook> {
		await this.#definitions.fresh();
		if (this.#definitions.size >= this.#settings.maxWebhooks)
			throw new GatewayError(429, "too_many_webhooks", `At most ${this.#settings.maxWebhooks} webhooks`);
		try {
			await this.#destinations.resolve(new URL(body.url));
		} catch (error) {
			throw new GatewayError(422, "webhook_destination_refused", (error as Error).message);
		}
		const hook: StoredWebhook = {
			id: `wh_${randomBytes(9).toString("base64url")}`,
			...fieldsOf(body),
			static: false,
			createdAt: new Date().toISOString(),
			secret: body.secret ?? `whsec_${randomBytes(32).toString("base64")}`,
		};
		await this.#definitions.add(hook);
		return hook;
	}

	async delete(id: string): Promise<void> {
		await this.#definitions.fresh();
		const hook = this.#definitions.require(id);
		if (hook.static)
			throw new GatewayError(409, "webhook_static", `Webhook ${id} comes from --webhooks-file; remove it there`);
		await this.#definitions.remove(id);
	}

	async deliveries(id: string, limit: number): Promise<Delivery[]> {
		await this.#definitions.fresh();
		this.#definitions.require(id);
		return this.#store.deliveries(id, limit);
	}

	async redeliver(id: string, deliveryId: string): Promise<Delivery> {
		await this.#definitions.fresh();
		this.#definitions.require(id);
		const delivery = this.#store.get(id, deliveryId);
		if (!delivery) throw new GatewayError(404, "delivery_not_found", `No delivery ${deliveryId} for webhook ${id}`);
		if (delivery.state === "pending" || this.#inFlight.has(key(delivery)))
			throw new GatewayError(409, "delivery_pending", `Delivery ${deliveryId} is still being attempted`);
		this.#store.requeue(id, deliveryId);
		const requeued = this.#store.get(id, deliveryId) as Delivery;
		this.#handover?.held([requeued]);
		this.#arm(0);
		return requeued;
	}

	/** A message that is no session event (a schedule's tick), queued for the webhooks that want it. */
	notify(sessionId: string, type: WebhookEventType, data: Record<string, unknown>): void {
		if (this.#definitions.size === 0 || !this.#store.open) return;
		this.#enqueue(sessionId, type, data);
	}

	#onEvent(sessionId: string, event: LoggedEvent): void {
		if (this.#definitions.size === 0 || !this.#store.open) return;
		try {
			const message = this.#messages.of(sessionId, event);
			if (message) this.#enqueue(sessionId, message.type, message.data);
		} catch (error) {
			this.#logger.error({ err: error, sessionId, event: event.type }, "webhooks: event not queued");
		}
	}

	#enqueue(sessionId: string, type: WebhookEventType, data: Record<string, unknown>): void {
		const targets = this.#definitions
			.all()
			.filter((h) => h.events.includes(type) && (h.sessions === null || h.sessions.includes(sessionId)));
		if (targets.length === 0) return;
		const createdAt = new Date().toISOString();
		const payload = JSON.stringify({ type, timestamp: createdAt, data });
		for (const hook of targets) {
			const id = `msg_${randomBytes(12).toString("base64url")}`;
			const dropped = this.#store.enqueue(hook.id, { id, type, payload, createdAt }, this.#settings.webhookMaxPending);
			if (!this.#handover) continue;
			const queued = this.#store.get(hook.id, id);
			if (queued) this.#handover.held([queued]);
			this.#handover.settled(dropped.map((droppedId) => ({ webhookId: hook.id, id: droppedId })));
		}
		this.#arm(0);
	}

	/** Wakes the pump in `ms` (sooner wins). */
	#arm(ms: number): void {
		if (this.#stopped) return;
		clearTimeout(this.#timer);
		this.#timer = setTimeout(() => this.#pump(), Math.max(0, ms)).unref();
	}

	#pump(): void {
		if (this.#stopped || !this.#store.open) return;
		const slots = this.#settings.webhookConcurrency - this.#inFlight.size;
		if (slots > 0) {
			const due = this.#store.due(Date.now(), slots + this.#inFlight.size).filter((d) => !this.#inFlight.has(key(d)));
			for (const delivery of due.slice(0, slots)) void this.#deliver(delivery);
		}
		const next = this.#store.nextDue();
		// With every slot busy, a finishing delivery re-arms the pump itself.
		if (next !== undefined) this.#arm(Math.min(Math.max(next - Date.now(), 10), 60_000));
	}

	async #deliver(delivery: Delivery): Promise<void> {
		const hook = this.#definitions.find(delivery.webhookId);
		if (!hook) return;
		const k = key(delivery);
		this.#inFlight.add(k);
		if (this.#handover && !(await this.#handover.mayDeliver(delivery))) {
			this.#inFlight.delete(k);
			if (this.#store.open) this.#store.discard(delivery.webhookId, delivery.id);
			this.#logger.info(
				{ webhookId: delivery.webhookId, deliveryId: delivery.id },
				"webhooks: another node holds this message now; forgotten here",
			);
			return;
		}
		const started = Date.now();
		let result: { status: number | null; error: string | null };
		try {
			const url = new URL(hook.url);
			const destination = await this.#destinations.resolve(url);
			const body = JSON.stringify(delivery.payload);
			const at = new Date();
			const headers = {
				"webhook-id": delivery.id,
				"webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
				"webhook-signature": new Signer(hook.secret).sign(delivery.id, at, body),
				"user-agent": "pi-gateway-webhooks",
			};
			result = await send(url, destination, headers, body, this.#settings.webhookTimeoutMs);
		} catch (error) {
			result = { status: null, error: error instanceof DestinationError ? `refused: ${error.message}` : String(error) };
		}
		this.#inFlight.delete(k);
		if (!this.#store.open || !this.#definitions.find(hook.id)) return;
		const ok = result.status !== null && result.status >= 200 && result.status < 300;
		const attempt = { at: new Date(started).toISOString(), ...result, durationMs: Date.now() - started };
		const last = delivery.attempts + 1 >= this.#settings.webhookMaxAttempts;
		try {
			if (ok) this.#store.settle(delivery, attempt, "delivered", null);
			else if (last) this.#store.settle(delivery, attempt, "failed", null);
			else this.#store.settle(delivery, attempt, "pending", Date.now() + this.#backoff(delivery.attempts));
			if (ok || last) this.#store.prune(hook.id, keepSettled);
			if (ok || last) this.#handover?.settled([delivery]);
			else this.#handover?.held([this.#store.get(hook.id, delivery.id) as Delivery]);
		} catch (error) {
			this.#logger.error({ err: error, webhookId: hook.id }, "webhooks: attempt not recorded");
		}
		if (!ok)
			this.#logger.warn({ webhookId: hook.id, deliveryId: delivery.id, ...result, last }, "webhook attempt failed");
		this.#arm(0);
	}

	/** Exponential backoff with jitter: attempt n waits between half and all of base·2ⁿ (capped at an hour). */
	#backoff(attempts: number): number {
		const ceiling = Math.min(this.#settings.webhookRetryBaseMs * 2 ** attempts, maxDelayMs);
		return ceiling / 2 + Math.random() * (ceiling / 2);
	}
}

const key = (d: Pick<Delivery, "webhookId" | "id">) => `${d.webhookId}/${d.id}`;

function publicView(hook: StoredWebhook): Webhook {
	const { secret: _secret, ...rest } = hook;
	return rest;
}
