import { OpenAPIHono, type z } from "@hono/zod-openapi";
import type { ZodType } from "zod";
import { ApiError, Problem } from "./problem.ts";

export type AppEnv = { Variables: { requestId: string } };

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

const problemDescriptions: Record<number, string> = {
	400: "Invalid input; nothing reached pi",
	401: "Missing or wrong bearer token",
	403: "A path lies outside the allowed roots",
	404: "No such session or approval",
	409: "Conflict: the agent is busy, the approval was already answered, or the session is stopped (auto-resume off)",
	410: "Gone: the approval expired or was cancelled, or the ephemeral session did not survive a restart or idle reaping",
	413: "Request body or an image in it too large",
	415: "The body is not sent as application/json",
	422: "pi refused the command (its message is in `detail`)",
	429: "A limit was reached (sessions, live pi processes, queued commands, subscribers)",
	502: "pi exited, crashed or could not start (the tail of its stderr is in `stderr`)",
	503: "The gateway is shutting down",
	504: "pi did not answer in time",
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

/** Statuses every session-scoped command can meet. */
export const commandProblems = [400, 401, 403, 404, 409, 410, 413, 415, 422, 429, 502, 503, 504];

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

/**
 * A string checked by `regex`, documented with a `pattern` every validator reads alike. zod writes
 * a flagged regex as `source/flags`, which matches nothing anywhere else; the bare source is
 * ECMA-262, and a unicode property class is spelled out as code point ranges, which Python's `re`
 * and Go's RE2 compile too (`\p{…}` is ECMA-262 unicode mode only).
 */
export function matching<T extends z.ZodString>(schema: T, regex: RegExp, message?: string) {
	if (regex.flags.replace("u", "") !== "") throw new Error(`pattern ${regex} has flags a spec cannot carry`);
	return schema.regex(regex, message).openapi({ pattern: portablePattern(regex.source) });
}

/** Unicode general categories as ranges (Cc, the control characters, is fixed by Unicode's stability policy). */
const propertyRanges: Record<string, string> = { "\\p{Cc}": "\\x00-\\x1F\\x7F-\\x9F" };

export function portablePattern(source: string): string {
	// Ranges stand in for an escape only inside a character class.
	const spelled = source.replace(/\[[^\]]*\]/g, (cls) =>
		cls.replace(/\\p\{\w+\}/g, (property) => propertyRanges[property] ?? property),
	);
	if (/\\[pP]\{/.test(spelled)) throw new Error(`no portable spelling for the property escape in ${source}`);
	return spelled;
}
