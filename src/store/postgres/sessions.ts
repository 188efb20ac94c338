// Over 300 lines on purpose: every write of a session's state goes through the one fenced, ordered,
// fail-soft queue here (records, the conversation copy, owner, shares, rules, release); the schema
// and the claim queries are beside it (schema.ts, claims.ts).
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import type { DatabaseSync } from "node:sqlite";
import type pg from "pg";
import type { Claim } from "../../cluster/cluster-store.ts";
import type { SessionStore, StoredSession, StoreEvents, Tombstone } from "../../sessions/registry/index.ts";
import { tombstoneMs } from "../../sessions/registry/index.ts";
import type { SqliteStore } from "../sqlite/sessions.ts";
import { claimSession, ownerOf } from "./claims.ts";
import { transaction } from "./schema.ts";

/**
 * The session registry in PostgreSQL (`--database-url`): cluster mode, where several nodes share
 * one database and each session belongs to at most one of them at a time (its owner, which runs
 * its pi process). Ownership is a column: `sessions.owner` names a node whose lease is in the
 * `nodes` table (src/cluster/membership.ts renews it). A node takes a session with claim() when
 * no live node holds it, gives it back with release() once it is stopped and quiet, and every
 * write it makes is fenced: it changes a row only while the row names this node and this node's
 * lease is still valid, so a node that was paused or cut off past its lease cannot overwrite what
 * the new owner wrote. A write refused that way reports lost(id): the node drops the session.
 *
 * Client: `pg` (node-postgres), not `postgres` (porsager): it is the client most operators
 * already run and debug, pure JavaScript (no native addon), and its Pool reports a lost server
 * as an 'error' event we can turn into the store's fail-soft health instead of a crash.
 *
 * The SessionStore interface is synchronous (the journal saves from event handlers and timers)
 * and PostgreSQL is not: writes go behind onto one ordered queue, a failed write is kept by key
 * (the latest write of a key replacing an older one) and replayed by retry(), exactly the
 * fail-soft contract of SqliteStore. restore() brings nothing back: a node starts empty and takes
 * sessions on demand (claim), so its start does not grow with the number of sessions.
 *
 * Webhook definitions and Idempotency-Key answers are the cluster's too (src/store/postgres/webhooks.ts,
 * src/store/postgres/idempotency.ts). Webhook deliveries (each session's owner delivers its
 * events), approval history, the audit log and remembered policies stay in the node's own
 * gateway.db (`local`), which also keeps one gateway per data dir.
 */
export class PostgresStore implements SessionStore {
	readonly #pool: pg.Pool;
	readonly #local: SqliteStore;
	readonly #beforeClose: (() => Promise<void>)[] = [];
	readonly #node: string;
	#events: StoreEvents = {};
	readonly #gone = new Map<string, Tombstone>();
	readonly #pending = new Map<string, () => Promise<unknown>>();
	#queue: Promise<void> = Promise.resolve();
	#writable = true;
	#closed: Promise<void> | undefined;
	/** Claims start sessions from their stored state; an unclean past shows per claim (ClaimResult.clean). */
	readonly previousRunClean = true;
	readonly detached = false;
	private constructor(pool: pg.Pool, local: SqliteStore, node: string) {
		this.#pool = pool;
		this.#local = local;
		this.#node = node;
	}

	/** The session store over the database's pool (PostgresDatabase.connect makes both): its close ends the pool. */
	static over(pool: pg.Pool, local: SqliteStore, node: string): PostgresStore {
		return new PostgresStore(pool, local, node);
	}

	/** The journal's events (the registry opens the store through an OpenStore function). */
	attach(events: StoreEvents): this {
		this.#events = events;
		return this;
	}

	/** The node's own SQLite, for the tables that are per node. */
	get database(): DatabaseSync {
		return this.#local.database;
	}

	/** Runs `last` when the store closes, after the sessions' writes and while this node is still a member. */
	beforeClose(last: () => Promise<void>): void {
		this.#beforeClose.push(last);
	}

	get node(): string {
		return this.#node;
	}

	get writable(): boolean {
		return this.#writable;
	}

	/** Resolves when every write queued so far has been tried (tests, shutdown, claims). */
	async settled(): Promise<void> {
		let queue: Promise<void>;
		do {
			queue = this.#queue;
			await queue;
		} while (queue !== this.#queue);
	}

	#write(key: string, op: () => Promise<unknown>): boolean {
		this.#pending.set(key, op);
		this.#enqueue(key, op);
		return this.#writable;
	}

	#enqueue(key: string, op: () => Promise<unknown>): void {
		this.#queue = this.#queue.then(async () => {
			// A newer write of the same key replaced this one: it runs in its own turn.
			if (this.#pending.get(key) !== op) return;
			try {
				await op();
			} catch (error) {
				this.#writable = false;
				this.#events.writeFailed?.(error as Error);
				return;
			}
			if (this.#pending.get(key) === op) this.#pending.delete(key);
			if (!this.#writable && this.#pending.size === 0) {
				this.#writable = true;
				this.#events.writable?.();
			}
		});
	}

	/** A fenced write that changed nothing: the row names another node now (or this node's lease ran out). */
	#fenced(id: string, result: pg.QueryResult): void {
		if (result.rowCount === 0) this.#events.lost?.(id);
	}

	restore(): StoredSession[] {
		const cutoff = new Date(Date.now() - tombstoneMs);
		this.#write("gc", () => this.#pool.query("DELETE FROM gone WHERE at < $1", [cutoff]));
		return [];
	}

	save(record: StoredSession): boolean {
		const text = JSON.stringify(record);
		return this.#write(`session:${record.id}`, async () =>
			this.#fenced(
				record.id,
				await this.#pool.query(
					`INSERT INTO sessions (id, record, owner, updated_at)
					 SELECT $1, $2, $3, now() WHERE EXISTS (SELECT 1 FROM nodes WHERE id = $3 AND lease_until > now())
					 ON CONFLICT (id) DO UPDATE SET record = EXCLUDED.record, updated_at = now() WHERE ${mine("sessions.owner", "$3")}`,
					[record.id, text, this.#node],
				),
			),
		);
	}

	/**
	 * Saves the session's last state and gives it up: any node may claim it now. Queued behind the
	 * session's other writes (its conversation first), under the same key as save().
	 */
	release(record: StoredSession): void {
		this.#write(`session:${record.id}`, () =>
			this.#pool.query(
				`UPDATE sessions SET owner = NULL, record = $2, updated_at = now() WHERE id = $1 AND owner = $3`,
				[record.id, JSON.stringify(record), this.#node],
			),
		);
	}

	remove(id: string): void {
		this.#pending.delete(`session:${id}`);
		this.#pending.delete(`file:${id}`);
		this.#write(`remove:${id}`, () =>
			this.#pool.query(
				`WITH s AS (DELETE FROM sessions WHERE id = $1 AND (owner IS NULL OR ${mine("owner", "$2")}) RETURNING id),
				 f AS (DELETE FROM conversations WHERE id IN (SELECT id FROM s)),
				 a AS (DELETE FROM session_access WHERE session_id IN (SELECT id FROM s)),
				 r AS (DELETE FROM session_rules WHERE session_id IN (SELECT id FROM s))
				 SELECT 1`,
				[id, this.#node],
			),
		);
	}

	bury(id: string, reason: Tombstone["reason"], at = new Date()): void {
		this.#pending.delete(`session:${id}`);
		this.#pending.delete(`file:${id}`);
		this.#gone.set(id, { id, reason, at: at.toISOString() });
		this.#write(`remove:${id}`, () =>
			transaction(this.#pool, async (client) => {
				await client.query(`DELETE FROM sessions WHERE id = $1 AND (owner IS NULL OR ${mine("owner", "$2")})`, [
					id,
					this.#node,
				]);
				await client.query("DELETE FROM conversations WHERE id = $1", [id]);
				await client.query("DELETE FROM session_access WHERE session_id = $1", [id]);
				await client.query("DELETE FROM session_rules WHERE session_id = $1", [id]);
				await client.query(
					"INSERT INTO gone (id, reason, at) VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE SET reason = EXCLUDED.reason, at = EXCLUDED.at",
					[id, reason, at],
				);
			}),
		);
	}

	saveConversation(id: string, file: string): void {
		this.#write(`file:${id}`, async () => {
			let content: Buffer;
			try {
				content = await readFile(file);
			} catch {
				return; // pi has written nothing yet, or the session was deleted meanwhile
			}
			// Fenced like save(): only the owner writes the conversation.
			await this.#pool.query(
				`INSERT INTO conversations (id, file, content, updated_at)
				 SELECT $1, $2, $3, now() WHERE EXISTS (SELECT 1 FROM sessions WHERE id = $1 AND ${mine("owner", "$4")})
				 ON CONFLICT (id) DO UPDATE SET file = EXCLUDED.file, content = EXCLUDED.content, updated_at = now()`,
				[id, file, content, this.#node],
			);
		});
	}

	async restoreConversation(id: string, file: string): Promise<boolean> {
		// Any write still queued for it goes first (a copy saved a moment ago).
		await this.settled();
		const { rows } = await this.#pool.query<{ content: Buffer }>("SELECT content FROM conversations WHERE id = $1", [
			id,
		]);
		const content = rows[0]?.content;
		if (!content) return false;
		await mkdir(dirname(file), { recursive: true });
		await writeFile(file, content, { mode: 0o600 });
		return true;
	}

	tombstone(id: string): Tombstone | undefined {
		return this.#gone.get(id);
	}

	/**
	 * Takes a session for this node when no live node holds it (claims.ts). The
	 * session's writes still queued here go first, so a release of a moment ago is not undone.
	 */
	async claim(id: string): Promise<Claim> {
		await this.settled();
		return await claimSession(this.#pool, this.#node, id);
	}

	/** The live node that runs session `id`, if one does (no lock, no wait for queued writes). */
	ownerOf(id: string): Promise<{ node: string; url: string } | undefined> {
		return ownerOf(this.#pool, id);
	}

	/** Keeps who owns a session and whom it is shared with, so the next owner knows (access.ts). */
	saveAccess(sessionId: string, owner: string, grants: unknown[]): void {
		this.#write(`access:${sessionId}`, () =>
			this.#pool.query(
				"INSERT INTO session_access (session_id, owner, grants) VALUES ($1, $2, $3) ON CONFLICT (session_id) DO UPDATE SET owner = EXCLUDED.owner, grants = EXCLUDED.grants",
				[sessionId, owner, JSON.stringify(grants)],
			),
		);
	}

	/** Keeps a session's remembered approval rules, so the next owner applies them (policy-engine.ts). */
	saveRules(sessionId: string, rules: string): void {
		this.#write(`rules:${sessionId}`, () =>
			this.#pool.query(
				"INSERT INTO session_rules (session_id, rules) VALUES ($1, $2) ON CONFLICT (session_id) DO UPDATE SET rules = EXCLUDED.rules",
				[sessionId, rules],
			),
		);
	}

	/** Replays the writes that failed, in order; with none, probes whether the server answers again. */
	retry(): void {
		if (this.#closed) return;
		if (this.#pending.size === 0) {
			if (!this.#writable) this.#write("probe", () => this.#pool.query("SELECT 1"));
			return;
		}
		for (const [key, op] of this.#pending) this.#enqueue(key, op);
	}

	/**
	 * Waits for the queued writes, gives up every session this node still owns (they are stopped
	 * by now: the registry shut down first) and its membership, and ends the pool.
	 */
	close(): Promise<void> {
		this.#closed ??= (async () => {
			await this.settled();
			for (const last of this.#beforeClose) await last().catch(() => {});
			await this.#pool.query("UPDATE sessions SET owner = NULL WHERE owner = $1", [this.#node]).catch(() => {});
			await this.#pool.query("DELETE FROM nodes WHERE id = $1", [this.#node]).catch(() => {});
			await this.#pool.end().catch(() => {});
			this.#local.close();
		})();
		return this.#closed;
	}
}

/** SQL: the row's owner column names this node, and this node's lease has not run out. */
const mine = (column: string, node: string) =>
	`${column} = ${node} AND EXISTS (SELECT 1 FROM nodes WHERE id = ${node} AND lease_until > now())`;

export { migrate, migrations, redact } from "./schema.ts";
