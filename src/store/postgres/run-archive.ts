import type pg from "pg";
import type { RunArchive } from "../../workspace/run-archive.ts";
import { maxRuns } from "../../workspace/snapshot-manifest.ts";
import { needDatabase } from "./schema.ts";

/** The workspace's run archive (src/workspace/run-archive.ts) in PostgreSQL's workspace_runs. */

export class PostgresRunArchive implements RunArchive {
	readonly #pool: pg.Pool;

	constructor(pool: pg.Pool) {
		this.#pool = pool;
	}

	async save(sessionId: string, runId: string, changes: unknown): Promise<void> {
		await this.#pool.query(
			"INSERT INTO workspace_runs (session_id, run_id, changes) VALUES ($1, $2, $3) ON CONFLICT (session_id, run_id) DO UPDATE SET changes = EXCLUDED.changes, settled_at = now()",
			[sessionId, runId, JSON.stringify(changes)],
		);
		await this.#pool.query(
			"DELETE FROM workspace_runs WHERE session_id = $1 AND run_id NOT IN (SELECT run_id FROM workspace_runs WHERE session_id = $1 ORDER BY settled_at DESC LIMIT $2)",
			[sessionId, maxRuns],
		);
	}

	async load(sessionId: string, runId: string): Promise<unknown | undefined> {
		const { rows } = await needDatabase("a run's changes", () =>
			this.#pool.query<{ changes: string }>(
				"SELECT changes FROM workspace_runs WHERE session_id = $1 AND run_id = $2",
				[sessionId, runId],
			),
		);
		return rows[0] ? JSON.parse(rows[0].changes) : undefined;
	}

	async forget(sessionId: string): Promise<void> {
		await this.#pool.query("DELETE FROM workspace_runs WHERE session_id = $1", [sessionId]);
	}
}
