import type { DatabaseSync } from "node:sqlite";
import { gatewayVersion } from "../../shared/package-files.ts";
import { migrationsTable } from "./schema.ts";

/** One change gateway.db went through, as `migrations` records it. */
export interface Migration {
	name: string;
	gatewayVersion: string;
	appliedAt: string;
}

/**
 * Runs `change`, one in-place change of gateway.db (a column added to an older table, counts made
 * from the rows there), in a transaction that also records it in `migrations`: either both happen
 * or neither. Whether the change is needed is the caller's check on the tables themselves (a file
 * from before this record has none), so `change` runs only when that check says so.
 */
export function migrate(db: DatabaseSync, name: string, change: () => void): void {
	db.exec(migrationsTable);
	db.exec("BEGIN");
	try {
		change();
		db.prepare("INSERT OR REPLACE INTO migrations (name, gateway_version, applied_at) VALUES (?, ?, ?)").run(
			name,
			gatewayVersion,
			new Date().toISOString(),
		);
		db.exec("COMMIT");
	} catch (error) {
		db.exec("ROLLBACK");
		throw error;
	}
}

/** Every change recorded, oldest first (docs/operations.md, "Upgrades"). */
export function migrations(db: DatabaseSync): Migration[] {
	db.exec(migrationsTable);
	const rows = db
		.prepare("SELECT name, gateway_version, applied_at FROM migrations ORDER BY applied_at, name")
		.all() as { name: string; gateway_version: string; applied_at: string }[];
	return rows.map((r) => ({ name: r.name, gatewayVersion: r.gateway_version, appliedAt: r.applied_at }));
}
