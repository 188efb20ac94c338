import { realpathSync } from "node:fs";
import { areaOf } from "../../../sessions/process/index.ts";
import { ForkSessionBody, forkOptions, forkSeed, liveShare } from "../../../sessions/registry/index.ts";
import { copyFolder, type FolderCopy } from "../../../workspace/folder-copy.ts";
import { mayAccess } from "../../auth/ownership.ts";
import { assertMayApproveByPolicy } from "../../auth/policy-scope.ts";
import { adminPrincipal, hasScope } from "../../auth/principals.ts";
import { createRouter } from "../../transport/openapi.ts";
import type { Deps } from "../deps.ts";
import { forkSession } from "./fork.routes.ts";
import { viewOf } from "./session-view.ts";

/**
 * `POST …/fork-session`: a new session of the caller's from this one's conversation and folder
 * (sessions/registry/fork.ts, workspace/folder-copy.ts). The ownership check lets a reader of the
 * session through (principals.ts readsItsSession); what is made is checked as a create is: the
 * caller's policies scope, area, live share and (rate-limits.ts) session cap.
 */
export function forkRouter({ registry, access, config, cluster }: Deps) {
	return createRouter().openapi(forkSession, async (c) => {
		const { id } = c.req.valid("param");
		const request = ForkSessionBody.parse(c.req.valid("json") ?? {});
		const principal = c.get("principal") ?? adminPrincipal;
		const original = registry.get(id);
		const body = forkOptions(original, registry.optionsOf(id), request);
		assertMayApproveByPolicy(principal, body.policies);
		const admin = hasScope(principal, "admin");
		let folderCopy: FolderCopy | undefined;
		const root = realpathSync(config.workspaceRoot);
		const seed = forkSeed(config, original, request.entryId, async (from, to) => {
			folderCopy = await copyFolder(from, to, root, config.workspaceMaxForkBytes);
		});
		const session = await registry.create(
			body,
			{
				admin,
				sees: (other) => mayAccess(access, principal, other, "sessions:read"),
				area: areaOf(config, principal.name, admin),
				share: liveShare(config, principal.name, admin),
			},
			seed,
		);
		try {
			access.setOwner(session.id, principal.name);
		} catch (error) {
			// An owner the disk did not take (507): the session would be the admin's; it goes, folder and all.
			await registry.delete(session.id, { purge: true });
			throw error;
		}
		c.header("Location", `/v1/sessions/${session.id}`);
		const forkedFrom = { sessionId: original.id, entryId: request.entryId ?? null };
		return c.json({ ...viewOf(session, cluster?.()?.node), forkedFrom, folderCopy: folderCopy as FolderCopy }, 201);
	});
}
