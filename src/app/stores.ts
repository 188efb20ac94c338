import type { Logger } from "pino";
import { type Config, shareOf } from "../config/config.ts";
import type { IdempotencyKeys } from "../http/idempotency/key-store.ts";
import type { AuditStore } from "../http/observability/audit.ts";
import type { ScheduleStore } from "../schedules/store.ts";
import type { ApprovalHistoryStore, RulesStore } from "../sessions/dialogs/index.ts";
import type { AccessStore, OpenStore } from "../sessions/registry/index.ts";
import type { PostgresDatabase } from "../store/postgres/database.ts";
import type { PostgresStore } from "../store/postgres/sessions.ts";
import { SharedApprovalHistory, SharedAuditLog } from "../store/postgres/shared-records.ts";
import { SqliteAccessStore } from "../store/sqlite/access.ts";
import { SqliteApprovalHistory } from "../store/sqlite/approval-history.ts";
import { SqliteAuditLog } from "../store/sqlite/audit.ts";
import type { DatabaseSync } from "../store/sqlite/driver.ts";
import { IdempotencyStore } from "../store/sqlite/idempotency.ts";
import { SqliteScheduleStore } from "../store/sqlite/schedules.ts";
import { SqliteRulesStore } from "../store/sqlite/session-rules.ts";
import { SqliteStore } from "../store/sqlite/sessions.ts";
import { SqliteWebhookStore } from "../store/sqlite/webhooks.ts";
import type { WebhookStore } from "../webhooks/store.ts";

/**
 * The composition root's choice of stores (server.ts calls it): each area declares the store it
 * needs (sessions/, webhooks/, http/…) and src/store/ implements it; only this file and server.ts
 * name the concrete classes. `postgres` is cluster mode.
 */

/**
 * How the registry opens its store: SQLite in the data directory, or PostgreSQL. The first store
 * opened holds the node's gateway.db (`database`), where the other per-node tables sit beside the
 * registry's; a store opened again after a detach does not change that.
 */
export function sessionBackend(config: Config, postgres: PostgresStore | undefined) {
	let first: SqliteStore | PostgresStore | undefined;
	const open: OpenStore = (events) => {
		const store = postgres ? postgres.attach(events) : new SqliteStore(config.dataDir, events);
		first ??= store;
		return store;
	};
	const database = (): DatabaseSync => {
		if (!first) throw new Error("the registry's store is not open yet: call registry.open() first");
		return first.database;
	};
	return { open, database };
}

/** The per-node tables of gateway.db; in cluster mode history, audit log and schedules are the cluster's, read whole through any node. */
export function recordStores(
	db: DatabaseSync,
	config: Config,
	log: Logger,
	database: PostgresDatabase | undefined,
): {
	webhooks: WebhookStore;
	rules: RulesStore;
	history: ApprovalHistoryStore;
	access: AccessStore;
	audit: AuditStore;
	schedules: ScheduleStore;
} {
	const auditShare = shareOf(config.maxAuditEntries, config.maxAuditEntriesPerPrincipal);
	const historyShare = shareOf(config.maxApprovalHistory, config.maxApprovalHistoryPerPrincipal);
	const shared = (table: "approval_history" | "audit_log", max: number, share?: number) =>
		database?.records(table, max, log, share);
	// The node's own tables are made (and pruned) in cluster mode too, as a gateway.db always holds them.
	const history = new SqliteApprovalHistory(db, config.approvalHistoryMs, config.maxApprovalHistory, historyShare);
	const audit = new SqliteAuditLog(db, config.maxAuditEntries, auditShare);
	const sharedHistory = shared("approval_history", config.maxApprovalHistory, historyShare);
	const sharedAudit = shared("audit_log", config.maxAuditEntries, auditShare);
	return {
		webhooks: new SqliteWebhookStore(db, shareOf(config.webhookMaxPending, config.webhookMaxPendingPerPrincipal)),
		rules: new SqliteRulesStore(db),
		history: sharedHistory ? new SharedApprovalHistory(sharedHistory, config.approvalHistoryMs, history) : history,
		access: new SqliteAccessStore(db),
		audit: sharedAudit ? new SharedAuditLog(sharedAudit) : audit,
		// Cluster mode: the cluster's, so that each tick is claimed once whichever nodes are up.
		schedules: database ? database.schedules() : new SqliteScheduleStore(db),
	};
}

/** Idempotency-Key answers: the node's in gateway.db, or in cluster mode the cluster's in PostgreSQL. */
export async function idempotencyKeys(
	db: DatabaseSync,
	config: Config,
	log: Logger,
	database: PostgresDatabase | undefined,
): Promise<IdempotencyKeys> {
	const keyShare = shareOf(config.maxIdempotencyKeys, config.maxIdempotencyKeysPerPrincipal);
	return database
		? await database.idempotency(config.idempotencyTtlMs, config.maxIdempotencyKeys, log, keyShare)
		: new IdempotencyStore(db, config.idempotencyTtlMs, config.maxIdempotencyKeys, keyShare);
}
