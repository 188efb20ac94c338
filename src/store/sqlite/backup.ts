import { join } from "node:path";
import { loadSqlite } from "./driver.ts";

/**
 * Runs `copy` (`pi-gateway backup`'s archive of the data dir, src/cli/backup.ts) while gateway.db
 * is held as a running gateway holds it (SqliteStore: EXCLUSIVE locking, taken by a write
 * transaction). A gateway on the folder makes this answer "in use" and copy nothing; none can start
 * on it until the copy is done; and a killed gateway's write-ahead log is folded into gateway.db
 * first. So the copy is one moment's state.
 */
export function copyWhileHeld(dataDir: string, copy: () => void): "copied" | "in use" {
	const { DatabaseSync } = loadSqlite();
	const db = new DatabaseSync(join(dataDir, "gateway.db"));
	try {
		try {
			db.exec("PRAGMA locking_mode = EXCLUSIVE; BEGIN IMMEDIATE; COMMIT;");
		} catch (error) {
			if (/locked|busy/i.test((error as Error).message)) return "in use";
			throw error;
		}
		db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
		copy();
		return "copied";
	} finally {
		db.close();
	}
}
