import type { MiddlewareHandler } from "hono";
import type { Cluster } from "../../cluster/cluster.ts";
import type { SessionRegistry } from "../../sessions/registry/index.ts";
import { sessionPath } from "../auth/ownership.ts";
import type { AppEnv } from "../transport/openapi.ts";

/**
 * Cluster mode: what a client is told is done is stored, the session's folder too (durableAnswers
 * waits for the conversation): a wait-mode run answers once the files it wrote are in PostgreSQL,
 * an upload or a delete of a file once the folder is stored again, so a node killed right after
 * answering loses none of it (src/cluster/folder-sync.ts). Not while the database is out of reach
 * (running sessions go on answering), and at most FolderSync's bound.
 */
export function durableFolders(
	current: () => Cluster | undefined,
	registry: SessionRegistry,
): MiddlewareHandler<AppEnv> {
	return async function durableFoldersMiddleware(c, next) {
		const folders = current()?.folders;
		const id = folders && c.req.method !== "GET" && c.req.method !== "HEAD" ? sessionOf(c.req.path) : undefined;
		if (!folders || id === undefined) return next();
		const mark = folders.asked(id);
		await next();
		if (c.res.status >= 300 || !registry.has(id)) return;
		// Uploads and deletes change the folder without a run.
		if (c.req.path.endsWith("/files/content")) folders.schedule(id);
		if (registry.storeHealth().writable) await folders.durable(id, mark);
	};
}

function sessionOf(path: string): string | undefined {
	try {
		return decodeURIComponent(sessionPath.exec(path)?.[1] ?? "") || undefined;
	} catch {
		return undefined;
	}
}
