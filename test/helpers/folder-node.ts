import { mkdirSync, realpathSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import pino from "pino";
import { FolderSync } from "../../src/cluster/folder-sync.ts";
import { type ConfigInput, parseConfig } from "../../src/config/config.ts";
import type { SessionRegistry } from "../../src/sessions/registry/registry.ts";
import type { StoredSession } from "../../src/sessions/registry/session-store.ts";
import type { Session } from "../../src/sessions/session/session.ts";
import { PostgresFolderStore } from "../../src/store/postgres/folder-store.ts";
import { migrate } from "../../src/store/postgres/schema.ts";
import { lease, query } from "./postgres.ts";

/**
 * A cluster node's folder sync (src/cluster/folder-sync.ts) without the rest of a gateway: its
 * own data dir and workspace root, the real FolderStore on a real PostgreSQL, and sessions that are
 * only what the sync reads of them (id, cwd, persist, an event log). Its lease is long; `own(id)`
 * makes a session this node's in the database, as a claim would.
 */
export interface FolderNode {
	name: string;
	root: string;
	sync: FolderSync;
	store: PostgresFolderStore;
	pool: pg.Pool;
	/** Gateway events the sync appended to sessions' logs, parsed. */
	events: Record<string, any>[];
	/** A session of this node working in `cwd` (default: its own folder under the root, made). */
	session(id: string, cwd?: string): FakeSession;
	/** This node owns `id` now (its row made if missing). */
	own(id: string): Promise<void>;
	close(): Promise<void>;
}

export interface FakeSession {
	id: string;
	cwd: string;
	persist: boolean;
	folderRestore?: unknown;
	events: { append(type: string, json: string): void };
}

export async function folderNode(
	databaseUrl: string,
	name: string,
	dir: string,
	overrides: Partial<ConfigInput> = {},
): Promise<FolderNode> {
	const dataDir = join(dir, name);
	const config = parseConfig({ dataDir, ...overrides });
	mkdirSync(config.workspaceRoot, { recursive: true });
	const root = realpathSync(config.workspaceRoot);
	const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 });
	await migrate(pool);
	await lease(databaseUrl, name, 3600);
	const sessions = new Map<string, FakeSession>();
	const registry = {
		has: (id: string) => sessions.has(id),
		get: (id: string) => sessions.get(id),
		persisted: async () => {},
		subscribeAll: () => () => {},
	} as unknown as SessionRegistry;
	const store = new PostgresFolderStore(pool, name);
	const sync = new FolderSync(config, store, registry, pino({ level: "silent" }));
	const events: Record<string, any>[] = [];
	return {
		name,
		root,
		sync,
		store,
		pool,
		events,
		session(id, cwd = join(root, id)) {
			mkdirSync(cwd, { recursive: true });
			const session: FakeSession = {
				id,
				cwd,
				persist: true,
				events: { append: (_type, json) => events.push(JSON.parse(json)) },
			};
			sessions.set(id, session);
			return session;
		},
		async own(id) {
			await query(
				databaseUrl,
				`INSERT INTO sessions (id, record, owner) VALUES ($1, '{}', $2) ON CONFLICT (id) DO UPDATE SET owner = EXCLUDED.owner`,
				[id, name],
			);
		},
		async close() {
			await pool.end();
		},
	};
}

/** A stored record of `id` whose folder was `cwd` (on whichever node). */
export const recordOf = (
	id: string,
	cwd: string,
	options: StoredSession["options"] = { persist: true },
): StoredSession => ({
	id,
	cwd,
	persist: true,
	options,
	piState: {},
	createdAt: new Date().toISOString(),
	lastActivityAt: Date.now(),
	lastSeq: 0,
});

/** The sync's report goes on a fake session as it would on a Session. */
export const asSession = (session: FakeSession) => session as unknown as Session;
