import type pg from "pg";
import type { Webhook } from "../../webhooks/schemas.ts";
import type { SharedWebhooks } from "../../webhooks/shared.ts";
import type { StoredWebhook } from "../../webhooks/store.ts";
import { sendNotice } from "./notifications.ts";

/** The cluster's webhook definitions: the `webhooks` table (migration 4); a change sends a `webhooks` notice. */
export class PostgresWebhooks implements SharedWebhooks {
	readonly #pool: pg.Pool;
	readonly #node: string;

	constructor(pool: pg.Pool, node: string) {
		this.#pool = pool;
		this.#node = node;
	}

	async list(): Promise<StoredWebhook[]> {
		const { rows } = await this.#pool.query<{ record: string; secret: string }>(
			"SELECT record, secret FROM webhooks ORDER BY id",
		);
		return rows.map((r) => ({ ...(JSON.parse(r.record) as Webhook), secret: r.secret }));
	}

	async put(hook: StoredWebhook): Promise<void> {
		const { secret, ...record } = hook;
		await this.#pool.query(
			`INSERT INTO webhooks (id, record, secret) VALUES ($1, $2, $3)
			 ON CONFLICT (id) DO UPDATE SET record = EXCLUDED.record, secret = EXCLUDED.secret, updated_at = now()`,
			[hook.id, JSON.stringify(record), secret],
		);
		sendNotice(this.#pool, { type: "webhooks", node: this.#node });
	}

	async remove(id: string): Promise<void> {
		await this.#pool.query("DELETE FROM webhooks WHERE id = $1", [id]);
		// Its undelivered messages go with it, wherever they were held.
		await this.#pool.query("DELETE FROM webhook_outbox WHERE webhook_id = $1", [id]);
		sendNotice(this.#pool, { type: "webhooks", node: this.#node });
	}
}
