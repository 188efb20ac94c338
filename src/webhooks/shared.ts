import type { Delivery } from "./schemas.ts";
import type { StoredWebhook } from "./store.ts";

/**
 * Where a cluster keeps its webhook definitions (cluster mode; src/store/postgres/webhooks.ts): every node
 * reads and writes them there, and each change tells the other nodes to read them again. The
 * service keeps a copy in the node's own WebhookStore, so the event hub matches events against it
 * synchronously.
 */
export interface SharedWebhooks {
	list(): Promise<StoredWebhook[]>;
	put(hook: StoredWebhook): Promise<void>;
	remove(id: string): Promise<void>;
}

export type DeliveryKey = Pick<Delivery, "webhookId" | "id">;

/**
 * Where a cluster keeps every node's undelivered messages (cluster mode; src/store/postgres/webhook-outbox.ts),
 * so that a node that dies or stops does not take them with it: the others adopt them. Each node
 * still sends from its own outbox (gateway.db); this is the copy that names which node holds what.
 */
export interface SharedOutbox {
	/** This node holds these pending deliveries as they are now (a new message, a retry scheduled, a redelivery). */
	hold(deliveries: Delivery[]): Promise<void>;
	/** These left this node's queue (delivered, failed, dropped). */
	settle(keys: DeliveryKey[]): Promise<void>;
	/** Who holds a delivery: this node, another node (it was adopted), or none on record. */
	holder(key: DeliveryKey): Promise<"mine" | "elsewhere" | "unknown">;
	/** Takes over the pending deliveries (of these webhooks) of nodes whose lease has run out, and returns them. */
	adoptOrphans(webhookIds: string[]): Promise<Delivery[]>;
	/** Gives every pending delivery of this node up (it is stopping): the next live node adopts them. */
	release(): Promise<void>;
}
