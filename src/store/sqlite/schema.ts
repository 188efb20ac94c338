/**
 * Every table of gateway.db, the node's own SQLite file, in one place. gateway.db has no numbered
 * migrations: each owner creates its tables (CREATE … IF NOT EXISTS) when it opens the shared
 * handle, so a data directory from an older gateway gains the tables it lacks. The one change to
 * an existing table, Idempotency-Key answers scoped to their principal, drops the old unscoped
 * table before this one is created (dropUnscopedTable in idempotency.ts).
 * PostgreSQL's tables (cluster mode) are the numbered list in ../postgres/schema.ts.
 */

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

/** Who owns each session and whom it is shared with (SessionAccess, src/sessions/access.ts). */
export const accessTable = `
CREATE TABLE IF NOT EXISTS session_access (
	session_id TEXT PRIMARY KEY,
	owner TEXT NOT NULL,
	grants TEXT NOT NULL
);`;

/** Approval rules remembered per session (PolicyEngine, src/sessions/policy-engine.ts). */
export const sessionRulesTable =
	"CREATE TABLE IF NOT EXISTS approval_session_rules (session_id TEXT PRIMARY KEY, rules TEXT NOT NULL)";

/** Resolved approvals (ApprovalHistory, src/sessions/approval-history.ts). */
export const approvalHistoryTable = `
CREATE TABLE IF NOT EXISTS approval_history (
	session_id TEXT NOT NULL,
	id TEXT NOT NULL,
	status TEXT NOT NULL,
	resolved_at TEXT NOT NULL,
	record TEXT NOT NULL,
	PRIMARY KEY (session_id, id)
);
CREATE INDEX IF NOT EXISTS approval_history_resolved ON approval_history (resolved_at);`;

/** Webhooks and their outbox (WebhookStore, webhooks.ts). */
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
	PRIMARY KEY (webhook_id, id)
);
CREATE INDEX IF NOT EXISTS webhook_outbox_due ON webhook_outbox (state, next_at);`;

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
CREATE INDEX IF NOT EXISTS idempotency_keys_age ON idempotency_keys (created_at);`;

/** The audit log (AuditLog, src/http/observability/audit.ts). */
export const auditTable = `
CREATE TABLE IF NOT EXISTS audit_log (
	principal TEXT NOT NULL,
	session_id TEXT,
	record TEXT NOT NULL
);`;
