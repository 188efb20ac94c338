import { createRoute, z } from "@hono/zod-openapi";
import { CreateSessionBody } from "../../../sessions/process/index.ts";
import { json, jsonBody, problem, problems } from "../../transport/openapi.ts";
import { SessionParams } from "../../transport/params.ts";
import { SessionList, SessionListQuery } from "./session-page.ts";
import { SessionView } from "./session-view.ts";

export const createSession = createRoute({
	operationId: "sessions.create",
	method: "post",
	path: "/v1/sessions",
	tags: ["sessions"],
	summary: "Start a pi session (answers once pi is ready)",
	request: {
		body: jsonBody(CreateSessionBody, { name: "demo" }),
	},
	responses: {
		201: {
			...json(SessionView, "The session, ready for commands"),
			headers: z.object({ Location: z.string().openapi({ example: "/v1/sessions/ses_Qm9wYXJ0aWFs" }) }),
		},
		// 404: `resume` names no pi session the caller may continue.
		...problems(400, 401, 403, 404, 409, 413, 415, 429, 502, 503, 507),
		422: problem(
			"`unknown_model`: pi has no usable model by that `provider`/`model` (not one of its models, or its provider has no credentials); `models` lists those it offers, as `provider/id`. The session is not created",
		),
	},
});

export const listSessions = createRoute({
	operationId: "sessions.list",
	method: "get",
	path: "/v1/sessions",
	tags: ["sessions"],
	summary: "Sessions, oldest first, a page at a time",
	description:
		"Paged like the other lists: `limit` (default 100, at most 500) and `cursor` (an earlier page's `nextCursor`); a call without them answers the first page, and `hasMore`/`nextCursor` say whether more follow. Filters: `status`, `node` (cluster mode: the node that runs it) and `principal` (the owner; another principal than the caller's needs the admin scope: a caller sees only the sessions it may read anyway). In cluster mode the list is the whole cluster's.",
	request: { query: SessionListQuery },
	responses: {
		200: json(SessionList, "A page of sessions, oldest first"),
		...problems(400, 401),
		403: problem(
			"The credential lacks this operation's scope, or `principal` names another principal without the admin scope",
		),
	},
});

export const getSession = createRoute({
	operationId: "sessions.get",
	method: "get",
	path: "/v1/sessions/{id}",
	tags: ["sessions"],
	summary: "One session",
	request: { params: SessionParams },
	responses: { 200: json(SessionView, "The session"), ...problems(401, 404, 410) },
});

export const deleteSession = createRoute({
	operationId: "sessions.delete",
	method: "delete",
	path: "/v1/sessions/{id}",
	tags: ["sessions"],
	summary: "Stop pi (stdin close, then SIGTERM, then SIGKILL) and forget the session (pi's session file stays)",
	description:
		"The session's folder is kept: a folder the gateway made for a session created without `cwd` (`<workspace-root>/<session id>`) stays for --workspace-retention-days (default 30; 0 keeps it forever) and is then removed, or at once with `?purge=true`. A `cwd` the client named is never removed. The session's snapshots (GET …/changes) go now.",
	request: {
		params: SessionParams,
		query: z.object({
			purge: z
				// A string of two values in the spec, not a boolean: swagger-codegen's Go client types an
				// optional boolean query parameter with optional.Bool, which its optional package lacks.
				.custom<string>((value) => typeof value === "string" && /^(true|false)$/i.test(value), "true or false")
				.openapi({ type: "string", enum: ["true", "false"] })
				.optional()
				.openapi({
					description:
						"`true`: remove the folder the gateway made for the session now, instead of after the retention period (unless another session works in it). A `cwd` the client named is kept either way",
				}),
		}),
	},
	responses: { 204: { description: "Stopped and removed" }, ...problems(400, 401, 404, 410) },
});
