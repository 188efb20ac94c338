import pg from "pg";
import type { Logger } from "pino";
import { SqliteStore } from "../sqlite/sessions.ts";
import { PostgresClusterStore } from "./cluster.ts";
import { PostgresIdempotencyStore } from "./idempotency.ts";
import { PostgresNotices } from "./notifications.ts";
import { PostgresRunArchive } from "./run-archive.ts";
import { PostgresSchedules } from "./schedules.ts";
import { migrate, redact } from "./schema.ts";
import { PostgresStore } from "./sessions.ts";
import { SharedRecords } from "./shared-records.ts";
import { PostgresOutbox } from "./webhook-outbox.ts";
import { PostgresWebhooks } from "./webhooks.ts";

/**
 * The cluster's database (`--database-url`) as the composition root sees it: the session store and
 * every other store over one connection pool, which stays in here (no caller gets the pool, so
 * each query the gateway runs is one of store/postgres's). Closing the session store ends the pool.
 */
export class PostgresDatabase {
	readonly sessions: PostgresStore;
	readonly #pool: pg.Pool;
	readonly #node: string;

	private constructor(pool: pg.Pool, sessions: PostgresStore, node: string) {
		this.#pool = pool;
		this.sessions = sessions;
		this.#node = node;
	}

	/**
	 * Connects and migrates the schema, for the node `node` (its row in `nodes` is the membership's
	 * to write). Throws (the gateway does not start) when the server is not there.
	 */
	static async connect(url: string, dataDir: string, node: string): Promise<PostgresDatabase> {
		// query_timeout: a server that stops answering (not refusing) must not hold a write or a claim forever.
		const pool = new pg.Pool({ connectionString: url, max: 6, connectionTimeoutMillis: 5000, query_timeout: 15_000 });
		// An idle client losing its server must not crash the process: the next write fails soft.
		pool.on("error", () => {});
		try {
			await migrate(pool);
			// Earlier versions kept the cluster's secret here, where any reader of the database could sign
			// tickets and forwards with it; the nodes hold it now (src/cluster/credentials.ts). At every
			// start, not as a numbered migration: nothing else changes, and it must go whatever the version.
			await pool.query("DELETE FROM meta WHERE key = 'cluster_secret'");
			const sessions = PostgresStore.over(pool, new SqliteStore(dataDir), node);
			return new PostgresDatabase(pool, sessions, node);
		} catch (error) {
			await pool.end().catch(() => {});
			throw new Error(`Cannot use the database ${redact(url)}: ${(error as Error).message}`);
		}
	}

	get node(): string {
		return this.#node;
	}

	cluster(): PostgresClusterStore {
		return new PostgresClusterStore(this.sessions, this.#pool);
	}

	webhooks(): PostgresWebhooks {
		return new PostgresWebhooks(this.#pool, this.#node);
	}

	outbox(): PostgresOutbox {
		return new PostgresOutbox(this.#pool, this.#node);
	}

	schedules(): PostgresSchedules {
		return new PostgresSchedules(this.#pool);
	}

	runArchive(): PostgresRunArchive {
		return new PostgresRunArchive(this.#pool);
	}

	notices(url: string, logger: Logger): PostgresNotices {
		return new PostgresNotices(url, this.#pool, logger);
	}

	records(...args: DropFirst<ConstructorParameters<typeof SharedRecords>>): SharedRecords {
		return new SharedRecords(this.#pool, ...args);
	}

	idempotency(ttlMs: number, maxKeys: number, logger: Logger, share?: number): Promise<PostgresIdempotencyStore> {
		return PostgresIdempotencyStore.open(this.#pool, this.#node, ttlMs, maxKeys, logger, share);
	}
}

type DropFirst<T extends unknown[]> = T extends [unknown, ...infer Rest] ? Rest : never;
