import { EventEmitter } from "node:events";
import pg from "pg";
import type { Logger } from "pino";

const channel = "pi_gateway";

/**
 * What nodes tell each other: something in the approval inbox changed on `node` (`approvals`),
 * or `node` changed a webhook definition (`webhooks`: every node reads them again).
 */
export interface ClusterNotice {
	type: "approvals" | "webhooks";
	node: string;
}

/** Fire and forget: a notice that cannot be sent is only a late wake-up elsewhere. */
export function notify(pool: pg.Pool, notice: ClusterNotice): void {
	pool.query("SELECT pg_notify($1, $2)", [channel, JSON.stringify(notice)]).catch(() => {});
}

/**
 * PostgreSQL LISTEN/NOTIFY between nodes, for what must wake a waiter on another node at once (a
 * long-poll of the approval inbox). One dedicated connection listens; it reconnects after a loss,
 * and a waiter re-reads the state anyway, so a notice lost meanwhile costs only latency.
 */
export class Notifications extends EventEmitter<{ notice: [ClusterNotice] }> {
	readonly #url: string;
	readonly #pool: pg.Pool;
	readonly #logger: Logger;
	#client: pg.Client | undefined;
	#closed = false;
	#retry: NodeJS.Timeout | undefined;

	constructor(url: string, pool: pg.Pool, logger: Logger) {
		super();
		this.#url = url;
		this.#pool = pool;
		this.#logger = logger;
	}

	start(): Promise<void> {
		return this.#connect();
	}

	async #connect(): Promise<void> {
		const client = new pg.Client({ connectionString: this.#url });
		const lost = () => {
			if (this.#client !== client) return;
			this.#client = undefined;
			client.end().catch(() => {});
			if (!this.#closed) this.#retry = setTimeout(() => void this.#connect().catch(() => {}), 1000).unref();
		};
		client.on("error", lost);
		client.on("end", lost);
		client.on("notification", (message) => {
			try {
				this.emit("notice", JSON.parse(message.payload ?? "") as ClusterNotice);
			} catch {
				this.#logger.warn({ payload: message.payload }, "cluster: unreadable notice");
			}
		});
		this.#client = client;
		try {
			await client.connect();
			await client.query(`LISTEN ${channel}`);
		} catch (error) {
			lost();
			throw error;
		}
	}

	send(notice: ClusterNotice): void {
		notify(this.#pool, notice);
	}

	async close(): Promise<void> {
		this.#closed = true;
		clearTimeout(this.#retry);
		const client = this.#client;
		this.#client = undefined;
		await client?.end().catch(() => {});
	}
}
