import type { Logger } from "pino";
import type { Delivery } from "./schemas.ts";
import type { DeliveryKey, SharedOutbox } from "./shared.ts";

/**
 * Cluster mode: keeps the cluster's record of this node's undelivered messages in step with its
 * outbox, and adopts the messages of nodes that are gone. The record is written behind, in order
 * (the event hub never waits for the database); before an attempt the queue is flushed and the
 * record asked who holds the message, so a message another node adopted is not sent twice. When the
 * database cannot answer, the attempt goes ahead: receivers dedupe on `webhook-id`, and a message
 * sent twice is better than one never sent.
 */
export class Handover {
	readonly #outbox: SharedOutbox;
	readonly #logger: Logger;
	#written: Promise<void> = Promise.resolve();
	#timer: NodeJS.Timeout | undefined;

	constructor(outbox: SharedOutbox, logger: Logger) {
		this.#outbox = outbox;
		this.#logger = logger;
	}

	held(deliveries: Delivery[]): void {
		if (deliveries.length > 0) this.#write("held", (o) => o.hold(deliveries));
	}

	settled(keys: DeliveryKey[]): void {
		if (keys.length > 0) this.#write("settled", (o) => o.settle(keys));
	}

	/** False when another node holds the message now (it adopted it while this node was gone or paused). */
	async mayDeliver(key: DeliveryKey): Promise<boolean> {
		await this.#written;
		try {
			return (await this.#outbox.holder(key)) !== "elsewhere";
		} catch (error) {
			this.#logger.warn(
				{ err: error, webhookId: key.webhookId, deliveryId: key.id },
				"webhooks: holder not read; sending",
			);
			return true;
		}
	}

	/**
	 * Every `everyMs`, adopts what nodes without a lease left for the webhooks this node `knows`
	 * (one another node has in its --webhooks-file only stays for a node that has it too) and hands
	 * it to `adopt`.
	 */
	start(everyMs: number, knows: () => Promise<string[]>, adopt: (deliveries: Delivery[]) => void): void {
		let busy = false;
		this.#timer = setInterval(async () => {
			if (busy) return;
			busy = true;
			try {
				const orphans = await this.#outbox.adoptOrphans(await knows());
				if (orphans.length > 0) {
					this.#logger.info(
						{ count: orphans.length },
						"webhooks: adopted the undelivered messages of a node that is gone",
					);
					adopt(orphans);
				}
			} catch (error) {
				this.#logger.warn({ err: error }, "webhooks: orphaned messages not read");
			} finally {
				busy = false;
			}
		}, everyMs);
		this.#timer.unref();
	}

	/** A stopping node: its record written, then every pending message given up for the others to adopt. */
	async release(): Promise<void> {
		clearInterval(this.#timer);
		await this.#written;
		try {
			await this.#outbox.release();
		} catch (error) {
			this.#logger.warn({ err: error }, "webhooks: undelivered messages not handed over; they wait for this node");
		}
	}

	#write(what: string, write: (outbox: SharedOutbox) => Promise<void>): void {
		this.#written = this.#written.then(() =>
			write(this.#outbox).catch((error) =>
				this.#logger.warn({ err: error }, `webhooks: ${what} messages not recorded in the cluster`),
			),
		);
	}
}
