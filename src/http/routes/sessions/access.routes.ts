import { createRoute, z } from "@hono/zod-openapi";
import { SessionAccessRecord, SessionGrant } from "../../../sessions/registry/index.ts";
import { json, jsonBody, problems } from "../../transport/openapi.ts";
import { SessionParams } from "../../transport/params.ts";

export const ShareBody = z
	.strictObject({
		grants: z.array(SessionGrant).max(100).openapi({
			description:
				"Every principal the session is shared with and what it may do (replaces the list): `read`, `write` (reading included) or `answer` (its approvals only)",
		}),
	})
	.openapi("SessionShare", {
		description: "Whom to share the session with (the whole list)",
		example: { grants: [{ principal: "carol", can: ["answer"] }] },
	});

export const getSessionAccess = createRoute({
	operationId: "sessions.getAccess",
	method: "get",
	path: "/v1/sessions/{id}/access",
	tags: ["sessions"],
	summary: "Who owns the session and whom it is shared with",
	request: { params: SessionParams },
	responses: { 200: json(SessionAccessRecord, "Owner and grants"), ...problems(401, 403, 404) },
});

export const putSessionAccess = createRoute({
	operationId: "sessions.putAccess",
	method: "put",
	path: "/v1/sessions/{id}/access",
	tags: ["sessions"],
	summary: "Share the session: principals and what each may do (owner or admin only)",
	description:
		"Others see a session only when it is shared with them (404 otherwise, as for an id that does not exist). An approver with `answer` sees and answers the session's approvals, in its inbox too, but cannot read or prompt the session. Only the owner or an admin may change this (403 for a principal the session is shared with).",
	request: { params: SessionParams, body: jsonBody(ShareBody) },
	responses: { 200: json(SessionAccessRecord, "Owner and grants, as now"), ...problems(400, 401, 403, 404, 415, 507) },
});
