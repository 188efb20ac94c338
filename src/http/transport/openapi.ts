import { OpenAPIHono, type z } from "@hono/zod-openapi";
import type { ZodType } from "zod";
import type { Principal } from "./principal.ts";
import { ApiError, Problem } from "./problem.ts";

/** `principal`: who is calling, set by the bearer middleware (absent only on public routes). */
/** `clientAddress`: the client's address as the node that forwarded the request saw it (cluster mode). */
/** `forwardedTo`: the node this request was forwarded to (cluster mode), which audits it. */
export type AppEnv = {
	Variables: {
		requestId: string;
		principal?: Principal;
		clientAddress?: string;
		forwardedTo?: string;
		/** Registers an SSE stream this request opens, to end it when its principal's right goes (open-streams.ts). */
		watchStream?: (revoke: (detail: string) => void) => () => void;
	};
};

/** A router whose validation failures become 400 problem+json listing each issue. */
export function createRouter(): OpenAPIHono<AppEnv> {
	return new OpenAPIHono<AppEnv>({
		defaultHook: (result) => {
			if (result.success) return;
			throw invalid(result.error.issues);
		},
	});
}

export function invalid(issues: readonly z.core.$ZodIssue[]): ApiError {
	const listed = issues.map((issue) => ({ path: issue.path.join(".") || "(body)", message: issue.message }));
	const detail = listed.map((i) => `${i.path}: ${i.message}`).join("; ");
	return new ApiError(400, "invalid_input", detail || "Invalid input", { issues: listed });
}

export const problemDescriptions: Record<number, string> = {
	400: "Invalid input; nothing reached pi",
	401: "Missing or wrong bearer token",
	403: "The credential lacks this operation's scope, or a path lies outside the allowed roots",
	404: "No such session or approval",
	409: "Conflict: the agent is busy, the approval was already answered, the session is stopped (auto-resume off), or (create) another session holds the pi session file to resume",
	410: "Gone: the approval expired or was cancelled (or was pending on a cluster node that died), or the ephemeral session did not survive a restart or idle reaping",
	413: "Request body or an image in it too large",
	415: "The body is not sent as application/json",
	422: "pi refused the command (its message is in `detail`)",
	429: "A limit was reached (sessions, live pi processes, queued commands, subscribers)",
	501: "`not_supported_by_pi`: the pi this gateway runs is an older one (0.73) without this command (README, pi versions)",
	502: "pi exited, crashed or could not start (the tail of its stderr is in `stderr`)",
	503: "The gateway is shutting down",
	504: "pi did not answer in time",
	507: "The gateway cannot write its session registry (disk full or unwritable); live sessions go on",
};

/** The shared problem+json responses, spread into each route's `responses`. */
export function problems(...statuses: number[]) {
	return Object.fromEntries(
		statuses.map((status) => [
			status,
			{
				description: problemDescriptions[status] ?? "Error",
				content: { "application/problem+json": { schema: Problem } },
			},
		]),
	);
}

/** Statuses every session-scoped command can meet (409 among them: agent busy, session stopped). */
const commandProblems = [400, 401, 403, 404, 409, 410, 413, 415, 422, 429, 502, 503, 504];

/** The problem responses of every operation that sends a command to pi (runs, commands, /rpc, streams). */
export function commandErrors(...extra: number[]) {
	return problems(...commandProblems, ...extra);
}

/** One problem response whose description is the route's own (a status meaning more there). */
export function problem(description: string) {
	return { description, content: { "application/problem+json": { schema: Problem } } };
}

export function json<T extends ZodType>(schema: T, description: string) {
	return { description, content: { "application/json": { schema } } };
}

/**
 * A JSON request body, required exactly when the gateway refuses a request without one: Hono
 * validates a missing body as `{}`, so a schema that accepts `{}` makes the body optional.
 * Generated SDKs then let callers leave it out instead of forcing `body: {}`.
 */
export function jsonBody<T extends ZodType>(schema: T, example?: unknown) {
	return {
		required: !schema.safeParse({}).success,
		content: { "application/json": example === undefined ? { schema } : { schema, example } },
	};
}
