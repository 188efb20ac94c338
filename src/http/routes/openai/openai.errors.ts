import { z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../../transport/openapi.ts";

/** The paths that speak OpenAI's protocol: their errors are OpenAI's shape, not problem+json. */
export const openaiPath = /^\/v1\/(models|chat\/completions|responses)(\/|$)/;

export const OpenAIErrorResponse = z
	.object({
		error: z
			.object({
				message: z.string().openapi({ description: "What went wrong, in words (the gateway's `detail`)" }),
				type: z.string().openapi({
					description:
						"`invalid_request_error` (400, 404, 405, 409, 410, 413, 415, 422), `authentication_error` (401), `permission_error` (403), `rate_limit_error` (429), `server_error` (5xx)",
				}),
				param: z.string().nullable().openapi({ description: "The request field at fault, when one is" }),
				code: z.string().nullable().openapi({
					description:
						"The gateway's stable code (its problem+json `code`: `unauthorized`, `insufficient_scope`, `invalid_input`, …), or OpenAI's where one exists (`model_not_found`)",
				}),
			})
			.describe("What went wrong"),
	})
	.openapi("OpenAIErrorResponse", {
		description: "An error in OpenAI's shape: what the OpenAI-compatible routes answer instead of problem+json",
		example: {
			error: {
				message: "The model `gpt-4o` does not exist or you do not have access to it.",
				type: "invalid_request_error",
				param: "model",
				code: "model_not_found",
			},
		},
	});
export type OpenAIErrorResponse = z.infer<typeof OpenAIErrorResponse>;

/** Statuses every OpenAI-compatible operation may answer, each with OpenAI's error body. */
export function openaiErrors(...statuses: number[]) {
	const described: Record<number, string> = {
		400: "The request is not one the gateway can run (`param` names the field)",
		401: "Missing or wrong API key (the gateway's token or a key from --keys-file)",
		403: "The key lacks this operation's scope",
		404: "No such model, or no such response for this key",
		413: "The body is too large",
		415: "The body is not JSON",
		429: "A limit was reached (requests, sessions, live pi processes); `Retry-After` says when to retry",
		500: "The gateway failed",
		502: "The model or pi failed during the run",
		503: "The gateway is shutting down",
		504: "The run did not end within the gateway's wait limit (--wait-timeout-ms): it was aborted",
	};
	return Object.fromEntries(
		statuses.map((status) => [
			status,
			{
				description: described[status] ?? "Error",
				content: { "application/json": { schema: OpenAIErrorResponse } },
			},
		]),
	);
}

/** OpenAI's error `type` for an HTTP status. */
export function errorType(status: number): string {
	if (status === 401) return "authentication_error";
	if (status === 403) return "permission_error";
	if (status === 429) return "rate_limit_error";
	if (status >= 500) return "server_error";
	return "invalid_request_error";
}

type ProblemLike = {
	status?: number;
	code?: string;
	detail?: string;
	param?: string | null;
	issues?: { path?: string; message?: string }[];
};

/** A problem+json body (the gateway's one error type) in OpenAI's shape. */
export function fromProblem(status: number, problem: ProblemLike): OpenAIErrorResponse {
	const issuePath = problem.issues?.[0]?.path;
	return {
		error: {
			message: problem.detail ?? `HTTP ${status}`,
			type: errorType(status),
			// An inner request's error names the OpenAI field (or null); a refused body its issue's path.
			param: problem.param !== undefined ? problem.param : issuePath && issuePath !== "(body)" ? issuePath : null,
			code: problem.code ?? null,
		},
	};
}

/**
 * Codes of errors a retry would not mend, only repeat (a run the gateway aborted at its wait limit
 * would run again from the start): OpenAI's SDKs retry 408, 409, 429 and 5xx unless told not to.
 */
const notToRetry = new Set(["run_timeout", "model_error", "structured_output_failed"]);

/**
 * Registered before authentication, so every error on an OpenAI path (a wrong key, a missing scope,
 * a body too large, a 405) reaches the client in OpenAI's shape: app.onError renders problem+json
 * as everywhere, and this rewrites the body on the way out (status and headers stay).
 */
export function openaiErrorShape(): MiddlewareHandler<AppEnv> {
	return async function openaiErrorShapeMiddleware(c, next) {
		await next();
		const res = c.res;
		if (res.status < 400 || !openaiPath.test(c.req.path)) return;
		if (!res.headers.get("content-type")?.startsWith("application/problem+json")) return;
		const headers = new Headers(res.headers);
		headers.set("content-type", "application/json");
		if (c.req.method === "HEAD") {
			c.res = new Response(null, { status: res.status, headers });
			return;
		}
		const problem = (await res.json().catch(() => ({}))) as ProblemLike;
		if (problem.code && notToRetry.has(problem.code)) headers.set("x-should-retry", "false");
		c.res = new Response(JSON.stringify(fromProblem(res.status, problem)), { status: res.status, headers });
	};
}
