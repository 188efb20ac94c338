/**
 * Cluster mode: what each settled run changed, kept beyond this node (PostgreSQL:
 * src/store/postgres/run-archive.ts), so `GET …/changes?runId=` still answers after the session
 * moved to another node (its folder and shadow repository stay on the old node's disk). Written
 * before the run's `run_changes` event, so a client that saw the event can rely on it; the newest
 * `maxRuns` per session are kept, and a deleted session's go.
 */
export interface RunArchive {
	save(sessionId: string, runId: string, changes: unknown): Promise<void>;
	/** Throws 503 database_unavailable when the archive is out of reach: a client retries, on any node. */
	load(sessionId: string, runId: string): Promise<unknown | undefined>;
	forget(sessionId: string): Promise<void>;
}
