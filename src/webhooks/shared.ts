import type { StoredWebhook } from "./store.ts";

/**
 * Where a cluster keeps its webhook definitions (cluster mode; src/cluster/webhooks.ts): every node
 * reads and writes them there, and each change tells the other nodes to read them again. The
 * service keeps a copy in the node's own WebhookStore, so the event hub matches events against it
 * synchronously.
 */
export interface SharedWebhooks {
	list(): Promise<StoredWebhook[]>;
	put(hook: StoredWebhook): Promise<void>;
	remove(id: string): Promise<void>;
}
