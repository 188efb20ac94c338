import type pg from "pg";
import { GatewayError } from "../../shared/errors.ts";

/** What a client is told when a request needs the database and cannot have it: retry, on any node. */
export function databaseUnavailable(what: string, cause?: unknown): GatewayError {
	const why = cause instanceof Error ? ` (${cause.message})` : "";
	return new GatewayError(503, "database_unavailable", `${what}: the database is out of reach${why}`, {
		retryAfter: 2,
	});
}

/** Runs a query a request needs; a database out of reach becomes a 503 to retry, not a 500. */
export async function needDatabase<T>(what: string, query: () => Promise<T>): Promise<T> {
	try {
		return await query();
	} catch (error) {
		throw databaseUnavailable(what, error);
	}
}

/**
 * Runs `work` in one transaction on one connection: committed when it returns, rolled back when it
 * throws. A connection lost meanwhile fails the work (its query rejects); the client's own 'error'
 * event, which the pool listens to only while a client is idle, must not crash the process.
 */
export async function transaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
	const client = await pool.connect();
	let lost: Error | undefined;
	const onError = (error: Error) => {
		lost = error;
	};
	client.on("error", onError);
	try {
		await client.query("BEGIN");
		const result = await work(client);
		await client.query("COMMIT");
		return result;
	} catch (error) {
		await client.query("ROLLBACK").catch(() => {});
		throw error;
	} finally {
		client.off("error", onError);
		// A broken connection is not handed to the next caller.
		client.release(lost);
	}
}

/**
 * Versioned migrations, applied by the gateway itself in order. Each runs once, recorded in
 * pi_gateway_migrations; append new ones, never edit a released one. The record column is text,
 * not jsonb, so a row reads back byte for byte what was written (and an unreadable one is
 * reported like in SQLite instead of being refused by the server).
 */
export const migrations: { version: number; name: string; sql: string }[] = [
	{
		version: 1,
		name: "sessions, tombstones, meta",
		sql: `
CREATE TABLE sessions (id text PRIMARY KEY, record text NOT NULL, updated_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE gone (id text PRIMARY KEY, reason text NOT NULL, at timestamptz NOT NULL);
CREATE INDEX gone_at ON gone (at);
CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL);`,
	},
	{
		version: 2,
		name: "conversations: pi's session files",
		sql: "CREATE TABLE conversations (id text PRIMARY KEY, file text NOT NULL, content bytea NOT NULL, updated_at timestamptz NOT NULL DEFAULT now());",
	},
	{
		version: 3,
		name: "cluster: nodes and their leases, session owners, access",
		sql: `
CREATE TABLE nodes (id text PRIMARY KEY, name text NOT NULL, url text NOT NULL, started_at timestamptz NOT NULL DEFAULT now(), heartbeat_at timestamptz NOT NULL DEFAULT now(), lease_until timestamptz NOT NULL);
ALTER TABLE sessions ADD COLUMN owner text;
ALTER TABLE sessions ADD COLUMN epoch bigint NOT NULL DEFAULT 0;
CREATE INDEX sessions_owner ON sessions (owner);
CREATE TABLE session_access (session_id text PRIMARY KEY, owner text NOT NULL, grants text NOT NULL);`,
	},
	{
		version: 4,
		name: "cluster-wide webhooks and Idempotency-Key answers",
		sql: `
CREATE TABLE webhooks (id text PRIMARY KEY, record text NOT NULL, secret text NOT NULL, updated_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE idempotency_keys (key text PRIMARY KEY, fingerprint text NOT NULL, state text NOT NULL, answer text, node text NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
CREATE INDEX idempotency_keys_age ON idempotency_keys (created_at);`,
	},
	{
		version: 5,
		name: "cluster-wide approval history and audit log",
		sql: `
CREATE TABLE approval_history (seq bigserial PRIMARY KEY, session_id text NOT NULL, id text NOT NULL, status text NOT NULL, resolved_at timestamptz NOT NULL, record text NOT NULL, UNIQUE (session_id, id));
CREATE INDEX approval_history_resolved ON approval_history (resolved_at);
CREATE TABLE audit_log (seq bigserial PRIMARY KEY, principal text NOT NULL, session_id text, record text NOT NULL);`,
	},
	{
		version: 6,
		name: "remembered approval rules follow their session",
		sql: "CREATE TABLE session_rules (session_id text PRIMARY KEY, rules text NOT NULL);",
	},
	{
		version: 7,
		name: "undelivered webhook messages outlive their node",
		sql: `
CREATE TABLE webhook_outbox (webhook_id text NOT NULL, id text NOT NULL, node text NOT NULL, state text NOT NULL, type text NOT NULL, payload text NOT NULL, attempts integer NOT NULL, next_at bigint, created_at text NOT NULL, log text NOT NULL, settled_at timestamptz, PRIMARY KEY (webhook_id, id));
CREATE INDEX webhook_outbox_node ON webhook_outbox (node, state);`,
	},
	{
		version: 8,
		// Rows from before name no principal, so nobody can safely be given them: they go.
		name: "Idempotency-Key answers belong to the principal that sent them",
		sql: `
DELETE FROM idempotency_keys;
ALTER TABLE idempotency_keys ADD COLUMN principal text NOT NULL;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey, ADD PRIMARY KEY (principal, key);`,
	},
	{
		version: 9,
		// The folder stays on its node's disk; what its settled runs changed is kept here (src/store/postgres/run-archive.ts).
		name: "the changes of settled runs survive their session's move to another node",
		sql: "CREATE TABLE workspace_runs (session_id text NOT NULL, run_id text NOT NULL, settled_at timestamptz NOT NULL DEFAULT now(), changes text NOT NULL, PRIMARY KEY (session_id, run_id));",
	},
	{
		version: 10,
		// The expression src/store/postgres/session-rows.ts orders by, so a page is an index range, not a sort of every record.
		name: "GET /v1/sessions pages the stored sessions in their list order (createdAt, id)",
		sql: `CREATE INDEX sessions_list_order ON sessions (((record::json->>'createdAt') COLLATE "C"), (id COLLATE "C"));`,
	},
	{
		version: 11,
		// src/store/postgres/folder-store.ts: chunks by sha256 (shared by every session), each session's
		// manifest (path → kind, mode, size, hash, chunks, link target) and the chunks it holds (refs keep
		// a chunk from the collector). All of a session's rows go with its session row.
		name: "a session's folder follows it to another node",
		sql: `
CREATE TABLE folder_blobs (hash bytea PRIMARY KEY, content bytea NOT NULL);
CREATE TABLE folder_state (session_id text PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE, node text NOT NULL, root text NOT NULL, rel text NOT NULL, generation bigint NOT NULL, files integer NOT NULL, bytes bigint NOT NULL, omitted text NOT NULL, synced_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE folder_entries (session_id text NOT NULL REFERENCES folder_state (session_id) ON DELETE CASCADE, path bytea NOT NULL, kind text NOT NULL, mode integer NOT NULL, size bigint NOT NULL, hash bytea, chunks bytea, target bytea, PRIMARY KEY (session_id, path));
CREATE TABLE folder_refs (session_id text NOT NULL REFERENCES folder_state (session_id) ON DELETE CASCADE, hash bytea NOT NULL REFERENCES folder_blobs (hash), PRIMARY KEY (session_id, hash));
CREATE INDEX folder_refs_hash ON folder_refs (hash);`,
	},
	{
		version: 12,
		// src/store/postgres/fair-share.ts. Rows already there stay and are counted (the tables locked
		// meanwhile, so a node of the older version writing at once is counted too). Triggers keep the
		// counts, the total first: every writer takes the total's row before a principal's, so two never
		// wait for each other. The outbox's principal rides with an adopted message (webhook-outbox.ts).
		name: "fair shares: idempotency keys, audit entries and outbox messages counted per principal",
		sql: `
LOCK TABLE idempotency_keys, audit_log IN SHARE ROW EXCLUSIVE MODE;
CREATE TABLE fair_counts (store text NOT NULL, principal text NOT NULL, n bigint NOT NULL, PRIMARY KEY (store, principal));
CREATE INDEX fair_counts_most ON fair_counts (store, n DESC, principal DESC);
CREATE TABLE fair_totals (store text PRIMARY KEY, n bigint NOT NULL);
CREATE FUNCTION pi_gateway_fair_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'INSERT' THEN
		INSERT INTO fair_totals AS t (store, n) VALUES (TG_ARGV[0], 1) ON CONFLICT (store) DO UPDATE SET n = t.n + 1;
		INSERT INTO fair_counts AS c (store, principal, n) VALUES (TG_ARGV[0], NEW.principal, 1)
			ON CONFLICT (store, principal) DO UPDATE SET n = c.n + 1;
	ELSE
		UPDATE fair_totals SET n = n - 1 WHERE store = TG_ARGV[0];
		DELETE FROM fair_counts WHERE store = TG_ARGV[0] AND principal = OLD.principal AND n <= 1;
		UPDATE fair_counts SET n = n - 1 WHERE store = TG_ARGV[0] AND principal = OLD.principal;
	END IF;
	RETURN NULL;
END $$;
CREATE TRIGGER idempotency_keys_fair AFTER INSERT OR DELETE ON idempotency_keys FOR EACH ROW EXECUTE FUNCTION pi_gateway_fair_count('idempotency');
CREATE TRIGGER audit_log_fair AFTER INSERT OR DELETE ON audit_log FOR EACH ROW EXECUTE FUNCTION pi_gateway_fair_count('audit');
INSERT INTO fair_counts SELECT 'idempotency', principal, count(*) FROM idempotency_keys GROUP BY principal;
INSERT INTO fair_counts SELECT 'audit', principal, count(*) FROM audit_log GROUP BY principal;
INSERT INTO fair_totals SELECT 'idempotency', count(*) FROM idempotency_keys;
INSERT INTO fair_totals SELECT 'audit', count(*) FROM audit_log;
CREATE INDEX idempotency_keys_principal_age ON idempotency_keys (principal, created_at);
CREATE INDEX audit_log_principal ON audit_log (principal, seq);
ALTER TABLE webhook_outbox ADD COLUMN principal text;`,
	},
	{
		version: 13,
		// Approval history counted as migration 12 counts the others: each row in the share of the owner
		// of its session (session_access; one without a record is the admin's, as on one node). Rows
		// already there stay, are given their owner and are counted (the table locked meanwhile).
		name: "fair shares: approval history counted per principal (the owner of the approval's session)",
		sql: `
LOCK TABLE approval_history IN SHARE ROW EXCLUSIVE MODE;
ALTER TABLE approval_history ADD COLUMN principal text NOT NULL DEFAULT 'admin';
UPDATE approval_history h SET principal = a.owner FROM session_access a WHERE a.session_id = h.session_id;
CREATE TRIGGER approval_history_fair AFTER INSERT OR DELETE ON approval_history FOR EACH ROW EXECUTE FUNCTION pi_gateway_fair_count('approval_history');
INSERT INTO fair_counts SELECT 'approval_history', principal, count(*) FROM approval_history GROUP BY principal;
INSERT INTO fair_totals SELECT 'approval_history', count(*) FROM approval_history;
CREATE INDEX approval_history_principal ON approval_history (principal, seq);`,
	},
	{
		version: 14,
		// src/store/postgres/schedules.ts: a tick is claimed by moving next_run_at from its time (one node
		// wins); its row in schedule_runs records it. A session's schedules go with its row.
		name: "scheduled runs, each tick claimed once in the cluster",
		sql: `
CREATE TABLE schedules (id text PRIMARY KEY, session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE, principal text NOT NULL, record text NOT NULL, next_run_at bigint);
CREATE INDEX schedules_session ON schedules (session_id);
CREATE INDEX schedules_principal ON schedules (principal);
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE next_run_at IS NOT NULL;
CREATE TABLE schedule_runs (schedule_id text NOT NULL REFERENCES schedules (id) ON DELETE CASCADE, tick_at bigint NOT NULL, status text NOT NULL, run_id text, detail text, node text NOT NULL, PRIMARY KEY (schedule_id, tick_at));`,
	},
];

/** An arbitrary constant: the advisory lock every node takes while it migrates. */
const migrationLock = 0x70_69_67_77; // "pigw"

/**
 * Applies the missing migrations in one transaction under an advisory lock, so nodes that start
 * at once migrate one after the other: the first does the work, the others find it done.
 */
export async function migrate(pool: pg.Pool): Promise<number[]> {
	return await transaction(pool, async (client) => {
		await client.query("SELECT pg_advisory_xact_lock($1)", [migrationLock]);
		await client.query(
			"CREATE TABLE IF NOT EXISTS pi_gateway_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
		);
		const { rows } = await client.query<{ version: number }>("SELECT version FROM pi_gateway_migrations");
		const done = new Set(rows.map((r) => r.version));
		const applied: number[] = [];
		for (const m of migrations) {
			if (done.has(m.version)) continue;
			await client.query(m.sql);
			await client.query("INSERT INTO pi_gateway_migrations (version, name) VALUES ($1, $2)", [m.version, m.name]);
			applied.push(m.version);
		}
		return applied;
	});
}

/** The URL without its password, for messages and logs. */
export function redact(url: string): string {
	try {
		const u = new URL(url);
		if (u.password) u.password = "***";
		return u.toString();
	} catch {
		return "(an unparsable URL)";
	}
}
