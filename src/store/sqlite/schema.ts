/**
 * Every table of gateway.db, the node's own SQLite file, in one place. gateway.db has no numbered
 * migrations: each owner creates its tables (CREATE … IF NOT EXISTS) when it opens the shared
 * handle, so a data directory from an older gateway gains the tables it lacks. The one change to
 * an existing table, Idempotency-Key answers scoped to their principal, drops the old unscoped
 * table before this one is created (dropUnscopedTable in idempotency.ts); the outbox's principal
 * column is added in place to an older table and filled from session_access (webhooks.ts), as is
 * approval history's (approval-history.ts), and the fair-share counts are made from the rows
 * already there when their triggers are new (fair-share.ts).
 * Each of these changes in place is recorded, once it has run, in `migrations` (migrations.ts).
 * PostgreSQL's tables (cluster mode) are the numbered list in ../postgres/schema.ts.
 */

/**
 * What changed gateway.db in place (migrations.ts): one row per change, named after what it did
 * (`approval_history.principal`), with the gateway version that made it and when. A file made by
 * a gateway that already had the change has no row for it: nothing had to move.
 */
export const migrationsTable = `
CREATE TABLE IF NOT EXISTS migrations (
	name TEXT PRIMARY KEY,
	gateway_version TEXT NOT NULL,
	applied_at TEXT NOT NULL
);`;

/** The session registry (SqliteStore, sessions.ts): records, tombstones, the clean-stop mark. */
export const registryTables = `
CREATE TABLE IF NOT EXISTS sessions (
	id TEXT PRIMARY KEY,
	record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS gone (
	id TEXT PRIMARY KEY,
	reason TEXT NOT NULL,
	at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (
	key TEXT PRIMARY KEY,
	value TEXT NOT NULL
);`;

/** Who owns each session and whom it is shared with (SessionAccess, src/sessions/registry/access.ts). */
export const accessTable = `
CREATE TABLE IF NOT EXISTS session_access (
	session_id TEXT PRIMARY KEY,
	owner TEXT NOT NULL,
	grants TEXT NOT NULL
);`;

/** Approval rules remembered per session (PolicyEngine, src/sessions/dialogs/policy-engine.ts). */
export const sessionRulesTable =
	"CREATE TABLE IF NOT EXISTS approval_session_rules (session_id TEXT PRIMARY KEY, rules TEXT NOT NULL)";

/**
 * Resolved approvals (ApprovalHistory, src/sessions/dialogs/approval-history.ts). `principal` is the owner
 * of the approval's session, whose share of the history it counts in.
 */
export const approvalHistoryTable = `
CREATE TABLE IF NOT EXISTS approval_history (
	session_id TEXT NOT NULL,
	id TEXT NOT NULL,
	status TEXT NOT NULL,
	resolved_at TEXT NOT NULL,
	record TEXT NOT NULL,
	principal TEXT NOT NULL DEFAULT 'admin',
	PRIMARY KEY (session_id, id)
);
CREATE INDEX IF NOT EXISTS approval_history_resolved ON approval_history (resolved_at);`;

/** Made once an older table has its principal column: each principal's oldest first (an index holds the rowid). */
export const approvalHistoryIndexes =
	"CREATE INDEX IF NOT EXISTS approval_history_principal ON approval_history (principal)";

/**
 * Webhooks and their outbox (WebhookStore, webhooks.ts). `principal` is the owner of the session a
 * message is about, whose share of the webhook's outbox it counts in.
 */
export const webhookTables = `
CREATE TABLE IF NOT EXISTS webhooks (
	id TEXT PRIMARY KEY,
	record TEXT NOT NULL,
	secret TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS webhook_outbox (
	id TEXT NOT NULL,
	webhook_id TEXT NOT NULL,
	type TEXT NOT NULL,
	payload TEXT NOT NULL,
	state TEXT NOT NULL,
	attempts INTEGER NOT NULL,
	next_at INTEGER,
	created_at TEXT NOT NULL,
	log TEXT NOT NULL,
	principal TEXT NOT NULL DEFAULT 'admin',
	PRIMARY KEY (webhook_id, id)
);`;

/** The outbox's indexes, made once an older table has its principal column: due times, and each principal's oldest per webhook and due. */
export const webhookIndexes = `
CREATE INDEX IF NOT EXISTS webhook_outbox_due ON webhook_outbox (state, next_at);
CREATE INDEX IF NOT EXISTS webhook_outbox_principal ON webhook_outbox (webhook_id, principal, state, created_at);
CREATE INDEX IF NOT EXISTS webhook_outbox_principal_due ON webhook_outbox (state, principal, next_at);`;

/**
 * Schedules and their latest ticks (ScheduleStore, schedules.ts). `next_run_at` is ms since the
 * epoch, null while disabled; a tick's row is written when it is claimed and given its outcome after.
 * A session's row leaving the registry's table (deleted, or an ephemeral one buried) takes its schedules.
 */
export const scheduleTables = `
CREATE TABLE IF NOT EXISTS schedules (
	id TEXT PRIMARY KEY,
	session_id TEXT NOT NULL,
	principal TEXT NOT NULL,
	record TEXT NOT NULL,
	next_run_at INTEGER
);
CREATE INDEX IF NOT EXISTS schedules_session ON schedules (session_id);
CREATE INDEX IF NOT EXISTS schedules_principal ON schedules (principal);
CREATE INDEX IF NOT EXISTS schedules_due ON schedules (next_run_at);
CREATE TABLE IF NOT EXISTS schedule_runs (
	schedule_id TEXT NOT NULL,
	tick_at INTEGER NOT NULL,
	status TEXT NOT NULL,
	run_id TEXT,
	detail TEXT,
	node TEXT NOT NULL,
	PRIMARY KEY (schedule_id, tick_at)
);
CREATE TRIGGER IF NOT EXISTS schedules_follow_session AFTER DELETE ON sessions BEGIN
	DELETE FROM schedule_runs WHERE schedule_id IN (SELECT id FROM schedules WHERE session_id = OLD.id);
	DELETE FROM schedules WHERE session_id = OLD.id;
END;`;

/** Idempotency-Key answers, per principal (IdempotencyStore, idempotency.ts). */
export const idempotencyTable = `
CREATE TABLE IF NOT EXISTS idempotency_keys (
	principal TEXT NOT NULL,
	key TEXT NOT NULL,
	fingerprint TEXT NOT NULL,
	state TEXT NOT NULL,
	answer TEXT,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (principal, key)
);
CREATE INDEX IF NOT EXISTS idempotency_keys_age ON idempotency_keys (created_at);
CREATE INDEX IF NOT EXISTS idempotency_keys_principal_age ON idempotency_keys (principal, created_at);`;

/** The audit log (AuditLog, src/http/observability/audit.ts); an index holds the rowid, so its index is (principal, age). */
export const auditTable = `
CREATE TABLE IF NOT EXISTS audit_log (
	principal TEXT NOT NULL,
	session_id TEXT,
	record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_log_principal ON audit_log (principal);`;

/**
 * Fair shares (DESIGN, "Fair shares"; FairShare in fair-share.ts): how many rows each principal
 * holds in a capped table, per `scope` ('' where the cap is the table's, the webhook's id in the
 * outbox), and the scope's total. Triggers keep them, so a cap is checked with two lookups.
 */
export const fairShareTables = `
CREATE TABLE IF NOT EXISTS fair_counts (
	store TEXT NOT NULL,
	scope TEXT NOT NULL,
	principal TEXT NOT NULL,
	n INTEGER NOT NULL,
	PRIMARY KEY (store, scope, principal)
);
CREATE INDEX IF NOT EXISTS fair_counts_most ON fair_counts (store, scope, n, principal);
CREATE TABLE IF NOT EXISTS fair_totals (
	store TEXT NOT NULL,
	scope TEXT NOT NULL,
	n INTEGER NOT NULL,
	PRIMARY KEY (store, scope)
);`;

/**
 * The rows of `table` a store counts: `counted` and `scope` are SQL over a row, written with the
 * name the row goes by (NEW, OLD, or the table itself when the counts are made from scratch).
 * `state` says the condition reads the state column, which UPDATEs change.
 */
export interface CountedRows {
	store: string;
	table: string;
	scope: (row: string) => string;
	counted: (row: string) => string;
	state?: boolean;
}

/** The triggers that keep `rows`' counts (named with a version, so a changed rule makes new ones). */
export function fairShareTriggers(rows: CountedRows): string {
	const { store, table, scope, counted } = rows;
	const add = (row: string) => `
		INSERT INTO fair_counts (store, scope, principal, n) VALUES ('${store}', ${scope(row)}, ${row}.principal, 1)
			ON CONFLICT (store, scope, principal) DO UPDATE SET n = n + 1;
		INSERT INTO fair_totals (store, scope, n) VALUES ('${store}', ${scope(row)}, 1)
			ON CONFLICT (store, scope) DO UPDATE SET n = n + 1;`;
	const remove = (row: string) => `
		UPDATE fair_counts SET n = n - 1 WHERE store = '${store}' AND scope = ${scope(row)} AND principal = ${row}.principal;
		DELETE FROM fair_counts WHERE store = '${store}' AND scope = ${scope(row)} AND principal = ${row}.principal AND n <= 0;
		UPDATE fair_totals SET n = n - 1 WHERE store = '${store}' AND scope = ${scope(row)};
		DELETE FROM fair_totals WHERE store = '${store}' AND scope = ${scope(row)} AND n <= 0;`;
	const name = `fair1_${store}`;
	const moves = rows.state
		? `
CREATE TRIGGER ${name}_enter AFTER UPDATE OF state ON ${table} WHEN ${counted("NEW")} AND NOT ${counted("OLD")} BEGIN ${add("NEW")} END;
CREATE TRIGGER ${name}_leave AFTER UPDATE OF state ON ${table} WHEN ${counted("OLD")} AND NOT ${counted("NEW")} BEGIN ${remove("OLD")} END;`
		: "";
	return `
CREATE TRIGGER ${name}_insert AFTER INSERT ON ${table} WHEN ${counted("NEW")} BEGIN ${add("NEW")} END;
CREATE TRIGGER ${name}_delete AFTER DELETE ON ${table} WHEN ${counted("OLD")} BEGIN ${remove("OLD")} END;${moves}`;
}

/** Counts `rows` from scratch (their triggers are new: an older gateway.db, or a table made again). */
export function fairShareRecount({ store, table, scope, counted }: CountedRows): string {
	return `
DELETE FROM fair_counts WHERE store = '${store}';
DELETE FROM fair_totals WHERE store = '${store}';
INSERT INTO fair_counts (store, scope, principal, n)
	SELECT '${store}', ${scope(table)}, principal, count(*) FROM ${table} WHERE ${counted(table)} GROUP BY 2, 3;
INSERT INTO fair_totals (store, scope, n)
	SELECT '${store}', ${scope(table)}, count(*) FROM ${table} WHERE ${counted(table)} GROUP BY 2;`;
}
