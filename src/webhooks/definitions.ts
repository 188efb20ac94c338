import { readFileSync } from "node:fs";
import type { Logger } from "pino";
import { z } from "zod";
import { GatewayError } from "../shared/errors.ts";
import { type CreateWebhookBody, StaticWebhook } from "./schemas.ts";
import type { SharedWebhooks } from "./shared.ts";
import type { StoredWebhook, WebhookStore } from "./store.ts";

/** Cluster mode: how often the definitions are read again anyway (a notice lost in a reconnect). */
const resyncMs = 30_000;

/** A webhook's fields as a body gives them (events deduplicated, absent fields null). */
export function fieldsOf(body: CreateWebhookBody) {
	return {
		url: body.url,
		events: [...new Set(body.events)],
		sessions: body.sessions ?? null,
		description: body.description ?? null,
	};
}

/**
 * The webhooks this node knows, in a map the event hub matches against synchronously, kept in the
 * node's gateway.db: those of --webhooks-file (this node's own) and those made through the API.
 * Cluster mode (share()): the API's are the cluster's, in PostgreSQL; the copy here is read again
 * on every webhooks request, on a notice from the node that changed them, and every 30 s.
 */
export class WebhookDefinitions {
	readonly #store: WebhookStore;
	readonly #logger: Logger;
	readonly #hooks = new Map<string, StoredWebhook>();
	#shared: SharedWebhooks | undefined;
	#resync: NodeJS.Timeout | undefined;
	/** Reads of the shared definitions started, and the latest one applied (an older answer is dropped). */
	#reads = 0;
	#applied = 0;

	constructor(store: WebhookStore, logger: Logger, webhooksFile?: string) {
		this.#store = store;
		this.#logger = logger;
		if (webhooksFile) this.#loadStatic(webhooksFile);
		for (const hook of store.list()) this.#hooks.set(hook.id, hook);
	}

	get size(): number {
		return this.#hooks.size;
	}

	all(): StoredWebhook[] {
		return [...this.#hooks.values()];
	}

	find(id: string): StoredWebhook | undefined {
		return this.#hooks.get(id);
	}

	/** The webhook, or 404. */
	require(id: string): StoredWebhook {
		const hook = this.#hooks.get(id);
		if (!hook) throw new GatewayError(404, "webhook_not_found", `No webhook ${id}`);
		return hook;
	}

	async add(hook: StoredWebhook): Promise<void> {
		await this.#sharedWrite((shared) => shared.put(hook));
		this.#store.put(hook);
		this.#hooks.set(hook.id, hook);
	}

	async remove(id: string): Promise<void> {
		await this.#sharedWrite((shared) => shared.remove(id));
		this.#store.remove(id);
		this.#hooks.delete(id);
	}

	/**
	 * Cluster mode: the definitions made through the API are the cluster's, in `shared`; the copy
	 * here follows them (webhooks of --webhooks-file stay this node's own). Throws when they cannot
	 * be read, so a node does not start with the wrong ones.
	 */
	async share(shared: SharedWebhooks): Promise<void> {
		this.#shared = shared;
		await this.reload();
		this.#resync = setInterval(() => void this.reload().catch(() => {}), resyncMs).unref();
	}

	stop(): void {
		clearInterval(this.#resync);
	}

	/** Reads the shared definitions again (another node changed them) and applies them here. */
	async reload(): Promise<void> {
		if (!this.#shared) return;
		const read = ++this.#reads;
		const hooks = await this.#shared.list();
		if (read > this.#applied) this.#apply(hooks, read);
	}

	/** Before answering a webhooks request: the shared definitions as of now, or this node's copy when they cannot be read. */
	async fresh(): Promise<void> {
		await this.reload().catch((error) => this.#logger.warn({ err: error }, "webhooks: shared definitions not read"));
	}

	/** --webhooks-file: a JSON array of webhooks with fixed ids and secrets, replacing the previous file's. */
	#loadStatic(path: string): void {
		const entries = z.array(StaticWebhook).parse(JSON.parse(readFileSync(path, "utf8")));
		const previous = new Map(this.#store.list().map((h) => [h.id, h]));
		for (const hook of previous.values())
			if (hook.static && !entries.some((e) => e.id === hook.id)) this.#store.remove(hook.id);
		for (const entry of entries) {
			const old = previous.get(entry.id);
			if (old && !old.static)
				throw new Error(`--webhooks-file: ${entry.id} is the id of a webhook made through the API`);
			this.#store.put({
				...fieldsOf(entry),
				id: entry.id,
				static: true,
				createdAt: old?.createdAt ?? new Date().toISOString(),
				secret: entry.secret,
			});
		}
	}

	#apply(hooks: StoredWebhook[], read: number): void {
		if (!this.#store.open) return;
		this.#applied = read;
		const next = new Map(hooks.map((h) => [h.id, h]));
		const added: string[] = [];
		const removed: string[] = [];
		for (const [id, hook] of this.#hooks)
			if (!hook.static && !next.has(id)) {
				this.#store.remove(id);
				this.#hooks.delete(id);
				removed.push(id);
			}
		for (const hook of hooks) {
			const have = this.#hooks.get(hook.id);
			if (have?.static || (have && JSON.stringify(have) === JSON.stringify(hook))) continue;
			this.#store.put(hook);
			this.#hooks.set(hook.id, hook);
			added.push(hook.id);
		}
		if (added.length > 0 || removed.length > 0) this.#logger.info({ added, removed }, "webhooks: reloaded");
	}

	/** A change made here is the newest state: a read that started before it must not undo it. */
	async #sharedWrite(write: (shared: SharedWebhooks) => Promise<void>): Promise<void> {
		const shared = this.#shared;
		if (!shared) return;
		try {
			await write(shared);
		} catch (error) {
			throw new GatewayError(
				503,
				"database_unavailable",
				`Webhooks cannot be changed now: the database is out of reach (${(error as Error).message})`,
				{ retryAfter: 2 },
			);
		}
		this.#applied = ++this.#reads;
	}
}
