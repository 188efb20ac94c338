import { CreateSessionBody } from "../../../sessions/spawn.ts";
import type { Deps } from "../../deps.ts";
import { createRouter } from "../../openapi.ts";
import { createStreamTicket, resumeSession } from "./lifecycle.routes.ts";
import { viewOf } from "./session-view.ts";
import { createSession, deleteSession, getSession, listSessions } from "./sessions.routes.ts";

export function sessionsRouter({ registry, tickets }: Deps) {
	return createRouter()
		.openapi(createSession, async (c) => {
			// The body is optional: an empty POST starts a session with every default.
			const body = CreateSessionBody.parse(c.req.valid("json") ?? {});
			const session = await registry.create(body);
			c.header("Location", `/v1/sessions/${session.id}`);
			return c.json(viewOf(session), 201);
		})
		.openapi(listSessions, (c) => c.json({ sessions: registry.list().map(viewOf) }, 200))
		.openapi(getSession, (c) => c.json(viewOf(registry.get(c.req.valid("param").id)), 200))
		.openapi(deleteSession, async (c) => {
			await registry.delete(c.req.valid("param").id);
			return c.body(null, 204);
		})
		.openapi(resumeSession, async (c) => c.json(viewOf(await registry.resume(c.req.valid("param").id)), 200))
		.openapi(createStreamTicket, (c) => {
			const session = registry.get(c.req.valid("param").id);
			const { ticket, expiresAt } = tickets.issue(session.id);
			const eventsUrl = `/v1/sessions/${session.id}/events?ticket=${ticket}`;
			return c.json({ ticket, expiresAt, eventsUrl }, 201);
		});
}
