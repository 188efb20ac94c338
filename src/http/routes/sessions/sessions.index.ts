import { areaOf, CreateSessionBody } from "../../../sessions/process/index.ts";
import { liveShare } from "../../../sessions/registry/index.ts";
import { mayAccess } from "../../auth/ownership.ts";
import { assertMayApproveByPolicy } from "../../auth/policy-scope.ts";
import { adminPrincipal, hasScope } from "../../auth/principals.ts";
import { createRouter } from "../../transport/openapi.ts";
import { ApiError } from "../../transport/problem.ts";
import type { Deps } from "../deps.ts";
import { getSessionAccess, putSessionAccess } from "./access.routes.ts";
import { clusterSessions } from "./cluster-list.ts";
import { createStreamTicket, resumeSession } from "./lifecycle.routes.ts";
import { localCandidates } from "./local-list.ts";
import { unavailableModel } from "./model-check.ts";
import { assertMayFilterBy, pageOfViews } from "./session-page.ts";
import { viewOf } from "./session-view.ts";
import { createSession, deleteSession, getSession, listSessions } from "./sessions.routes.ts";

export function sessionsRouter({ registry, tickets, access, cluster, config }: Deps) {
	return createRouter()
		.openapi(createSession, async (c) => {
			// The body is optional: an empty POST starts a session with every default.
			const body = CreateSessionBody.parse(c.req.valid("json") ?? {});
			const principal = c.get("principal") ?? adminPrincipal;
			assertMayApproveByPolicy(principal, body.policies);
			// `resume` finds only what this principal may see: another's session is not there (404).
			const admin = hasScope(principal, "admin");
			const session = await registry.create(body, {
				admin,
				sees: (id) => mayAccess(access, principal, id, "sessions:read"),
				area: areaOf(config, principal.name, admin),
				share: liveShare(config, principal.name, admin),
			});
			// A model pi cannot run fails the create now, not the first prompt: its pi stops.
			const unusable = await unavailableModel(session, body);
			if (unusable) {
				await registry.delete(session.id).catch(() => {});
				throw unusable;
			}
			try {
				access.setOwner(session.id, principal.name);
			} catch (error) {
				// An owner the disk did not take (507): the session would be the admin's; it goes instead.
				await registry.delete(session.id);
				throw error;
			}
			c.header("Location", `/v1/sessions/${session.id}`);
			return c.json(viewOf(session, cluster?.()?.node), 201);
		})
		.openapi(listSessions, async (c) => {
			const principal = c.get("principal");
			const query = c.req.valid("query");
			assertMayFilterBy(principal, query.principal);
			const node = cluster?.();
			const local = localCandidates(registry, access, principal, query, node?.node);
			// Cluster mode: the whole cluster's, unless another node asks for this node's own.
			if (!node || node.isForwarded(c.req.raw.headers)) return c.json(pageOfViews(local, query.limit), 200);
			return c.json(await clusterSessions(node, local, principal, c.req.header("authorization") ?? null, query), 200);
		})
		.openapi(getSession, (c) => c.json(viewOf(registry.get(c.req.valid("param").id), cluster?.()?.node), 200))
		.openapi(deleteSession, async (c) => {
			const { id } = c.req.valid("param");
			await registry.delete(id, { purge: c.req.valid("query").purge?.toLowerCase() === "true" });
			access.forget(id);
			return c.body(null, 204);
		})
		.openapi(resumeSession, async (c) =>
			c.json(viewOf(await registry.resume(c.req.valid("param").id), cluster?.()?.node), 200),
		)
		.openapi(createStreamTicket, (c) => {
			const session = registry.get(c.req.valid("param").id);
			const { ticket, expiresAt } = tickets.issue(session.id, undefined, c.get("principal")?.name);
			const eventsUrl = `/v1/sessions/${session.id}/events?ticket=${ticket}`;
			return c.json({ ticket, expiresAt, eventsUrl }, 201);
		})
		.openapi(getSessionAccess, (c) => c.json(access.get(registry.get(c.req.valid("param").id).id), 200))
		.openapi(putSessionAccess, (c) => {
			const session = registry.get(c.req.valid("param").id);
			const principal = c.get("principal") ?? adminPrincipal;
			if (!hasScope(principal, "admin") && access.get(session.id).owner !== principal.name)
				throw new ApiError(403, "not_owner", `Only the owner of session ${session.id} or an admin shares it`);
			return c.json(access.share(session.id, c.req.valid("json").grants), 200);
		});
}
