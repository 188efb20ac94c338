import pg from "pg";
import type { Logger } from "pino";
import type { ClusterNotice, NoticeChannel } from "../../cluster/notifications.ts";

const channel = "pi_gateway";

/** Sends `notice` to every node; fire and forget (PostgresWebhooks sends its own this way too). */
export function sendNotice(pool: pg.Pool, notice: ClusterNotice): void {
	pool.query("SELECT pg_notify($1, $2)", [channel, JSON.stringify(notice)]).catch(() => {});
}

/**
 * The cluster's notices (src/cluster/notifications.ts) over PostgreSQL LISTEN/NOTIFY. One
 * dedicated connection listens, outside the pool (it is held for as long as the node runs); it
 * reconnects after a loss. Notices are sent through the pool.
 */
export class PostgresNotices implements NoticeChannel {
	readonly #url: string;
	readonly #pool: pg.Pool;
	readonly #logger: Logger;
	#deliver: ((notice: ClusterNotice) => void) | undefined;
	#client: pg.Client | undefined;
	#closed = false;
	#retry: NodeJS.Timeout | undefined;

	constructor(url: string, pool: pg.Pool, logger: Logger) {
		this.#url = url;
		this.#pool = pool;
		this.#logger = logger;
	}

	listen(deliver: (notice: ClusterNotice) => void): Promise<void> {
		this.#deliver = deliver;
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
				this.#deliver?.(JSON.parse(message.payload ?? "") as ClusterNotice);
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
		sendNotice(this.#pool, notice);
	}

	async close(): Promise<void> {
		this.#closed = true;
		clearTimeout(this.#retry);
		const client = this.#client;
		this.#client = undefined;
		await client?.end().catch(() => {});
	}
}
