import type { StoredSession } from "../../src/sessions/registry/session-store.ts";

/** A session record as a store keeps it (the store tests of SQLite and PostgreSQL write and read these). */
export const storedSession = (id: string, persist: boolean, createdAt: string): StoredSession => ({
	id,
	name: `n-${id}`,
	cwd: "/w",
	persist,
	options: { persist },
	piState: { sessionFile: `/s/${id}.jsonl`, sessionId: id },
	createdAt,
	lastActivityAt: 5,
	lastSeq: 42,
});
