import type pg from "pg";
import type { ClusterStore, RowQuery } from "../../cluster/cluster-store.ts";
import type { StoredSession, Tombstone } from "../../sessions/registry/index.ts";
import { claimView } from "./claims.ts";
import { PostgresFolderStore } from "./folder-store.ts";
import { PostgresMembership } from "./membership.ts";
import { needDatabase } from "./schema.ts";
import { storedRows } from "./session-rows.ts";
import type { PostgresStore } from "./sessions.ts";

/**
 * What cluster mode needs of PostgreSQL (src/cluster/cluster-store.ts), over the session store's
 * pool: the claims and fenced writes stay in PostgresStore, which the registry writes through too.
 */
export class PostgresClusterStore implements ClusterStore {
	readonly #store: PostgresStore;
	readonly #pool: pg.Pool;
	readonly membership: PostgresMembership;
	readonly folders: PostgresFolderStore;

	constructor(store: PostgresStore, pool: pg.Pool) {
		this.#store = store;
		this.#pool = pool;
		this.membership = new PostgresMembership(pool);
		this.folders = new PostgresFolderStore(pool, store.node);
	}

	get node() {
		return this.#store.node;
	}

	ownerOf(id: string) {
		return needDatabase(`Session ${id} cannot be looked up`, () => this.#store.ownerOf(id));
	}

	claim(id: string) {
		return needDatabase(`Session ${id} cannot be taken over`, () => this.#store.claim(id));
	}

	claimView(id: string) {
		return needDatabase(`Session ${id} cannot be looked up`, () => claimView(this.#pool, id));
	}

	async ownerState(id: string) {
		type Row = { owner: string | null; live: boolean | null };
		const { rows } = await this.#pool
			.query<Row>(
				"SELECT s.owner, n.lease_until > now() AS live FROM sessions s LEFT JOIN nodes n ON n.id = s.owner WHERE s.id = $1",
				[id],
			)
			.catch(() => ({ rows: [] as Row[] }));
		return rows[0];
	}

	async ownsNow(id: string) {
		const { rowCount } = await this.#pool.query(
			"SELECT 1 FROM sessions WHERE id = $1 AND owner = $2 AND EXISTS (SELECT 1 FROM nodes WHERE id = $2 AND lease_until > now())",
			[id, this.#store.node],
		);
		return rowCount === 1;
	}

	async ping() {
		await this.#pool.query("SELECT 1");
	}

	storedRows(query: RowQuery) {
		return needDatabase("Sessions cannot be listed", () => storedRows(this.#pool, query));
	}

	bury(id: string, reason: Tombstone["reason"]) {
		this.#store.bury(id, reason);
	}

	restoreConversation(id: string, file: string) {
		return this.#store.restoreConversation(id, file);
	}

	release(record: StoredSession) {
		this.#store.release(record);
	}

	beforeClose(last: () => Promise<void>) {
		this.#store.beforeClose(last);
	}
}
