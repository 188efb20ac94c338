import type { Context } from "hono";
import { GatewayError as ClientError, PiGateway } from "../../../client/index.ts";
import type { AppEnv } from "../../transport/openapi.ts";
import { ApiError } from "../../transport/problem.ts";

/** The gateway's own app, answering a request in-process (createApp's `app.fetch`). */
export type AppFetch = (request: Request, env: unknown) => Response | Promise<Response>;

/**
 * The gateway's own REST API as the caller: its Authorization header on every request, answered by
 * the app in-process, so keys, scopes, ownership, budgets, limits, audit and approvals hold exactly as
 * for a call from outside (each inner request is audited under the caller, with this request's id).
 */
export function callerGateway(c: Context<AppEnv>, appFetch: AppFetch): PiGateway {
	const headers: Record<string, string> = { "x-request-id": c.get("requestId") };
	const authorization = c.req.header("authorization");
	if (authorization) headers.authorization = authorization;
	const inProcess = async (input: string | URL | Request, init?: RequestInit) => {
		const res = await appFetch(new Request(input, init), c.env);
		return init?.signal ? endsOnAbort(res, init.signal) : res;
	};
	return new PiGateway({
		baseUrl: new URL(c.req.url).origin,
		headers,
		fetch: inProcess as typeof fetch,
		// In-process nothing cuts a stream but the run's own end (pi's exit): no reconnect.
		reconnect: { maxAttempts: 0, delayMs: 0 },
	});
}

/**
 * A body that fails with the signal's reason once it aborts, as fetch's does (an in-process
 * Response knows nothing of the caller's signal): a run followed in-process stops being read when
 * its request's client leaves, its wait runs out or it is cancelled, and the app's stream is
 * cancelled as for a client that went away.
 */
function endsOnAbort(res: Response, signal: AbortSignal): Response {
	if (!res.body) return res;
	const reader = res.body.getReader();
	let stop: () => void = () => {};
	const body = new ReadableStream<Uint8Array>({
		start(controller) {
			stop = () => {
				controller.error(signal.reason);
				void reader.cancel(signal.reason).catch(() => {});
			};
			if (signal.aborted) stop();
			else signal.addEventListener("abort", stop, { once: true });
		},
		async pull(controller) {
			const { done, value } = await reader.read();
			if (!done) return controller.enqueue(value);
			signal.removeEventListener("abort", stop);
			controller.close();
		},
		cancel(reason) {
			signal.removeEventListener("abort", stop);
			return reader.cancel(reason);
		},
	});
	return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
}

/**
 * What an inner request answered, as the error of this one: same status, code and words; `param`
 * names the OpenAI field where the gateway's field is known (`fields` maps its first path segment).
 */
export function asApiError(error: unknown, fields: Record<string, string> = {}): unknown {
	if (!(error instanceof ClientError)) return error;
	const issues = (error.problem as { issues?: { path: string; message: string }[] }).issues;
	const first = issues?.[0]?.path.split(".")[0];
	const param = first !== undefined ? (fields[first] ?? null) : null;
	const extra = {
		...(issues && { issues }),
		param,
		...(error.retryAfter !== undefined && { retryAfter: error.retryAfter }),
	};
	return new ApiError(error.status, error.code, error.detail, extra as never);
}

/** Runs `work`, turning what an inner request refused into this request's error. */
export async function inner<T>(work: Promise<T>, fields?: Record<string, string>): Promise<T> {
	try {
		return await work;
	} catch (error) {
		throw asApiError(error, fields);
	}
}
