import { Readable } from "node:stream";
import { archiveStream, listArchive } from "../../../workspace/archive.ts";
import type { ChangeTracker } from "../../../workspace/tracker.ts";
import { createRouter } from "../../transport/openapi.ts";
import type { Deps } from "../deps.ts";
import { archive, changes } from "./changes.routes.ts";

export function workspaceChangesRouter(deps: Deps, tracker: ChangeTracker) {
	return createRouter()
		.openapi(changes, async (c) => {
			const session = deps.registry.get(c.req.param("id"));
			return c.json(await tracker.changes(session.id, c.req.valid("query").runId), 200);
		})
		.openapi(archive, async (c) => {
			const session = deps.registry.get(c.req.param("id"));
			const { root, entries } = await listArchive(session.cwd, deps.config.workspaceMaxArchiveBytes);
			const body = Readable.toWeb(archiveStream(root, entries)) as ReadableStream;
			const headers = {
				"Content-Type": "application/gzip",
				"Content-Disposition": `attachment; filename="${session.id}.tar.gz"`,
			};
			return new Response(body, { status: 200, headers }) as never;
		});
}
