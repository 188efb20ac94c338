import type { Context, MiddlewareHandler } from "hono";
import { routePath } from "hono/route";
import { commandFields } from "../../pi/protocol.ts";
import { GatewayError } from "../../shared/errors.ts";
import type { AppEnv } from "../transport/openapi.ts";
import { requestedWait } from "../transport/wait.ts";
import type { Metrics } from "./prometheus.ts";

const session = "/v1/sessions/:id";

/** A session-scoped route that sends one pi command (the commands feature's table, handed in by app.ts). */
export interface CommandRoute {
	method: string;
	path: string;
	type: string;
}

/** Route template → pi command type, for every route that sends one command to pi. */
function commandRoutesOf(specs: readonly CommandRoute[]) {
	return new Map<string, string>([
		...specs.map((spec) => [`${spec.method.toUpperCase()} ${session}${spec.path}`, spec.type] as const),
		[`POST ${session}/prompt`, "prompt"],
		[`POST ${session}/steer`, "steer"],
		[`POST ${session}/follow-up`, "follow_up"],
		[`POST ${session}/rpc`, "rpc"],
	]);
}
const runRoutes = new Set(["prompt", "steer", "follow_up"]);

/** Statuses of requests stopped before they reached a session: not commands (bad input, auth, unknown id). */
const neverSent = new Set([400, 401, 403, 404, 413, 421]);

/**
 * Counts every request by route template and status, and every command that reached a session
 * by pi command type and outcome: `ok`, or the problem's code (agent_busy, pi_refused,
 * queue_full, pi_timeout, pi_exited, pi_crashed…). Observed at the HTTP layer so sessions stay
 * unaware of metrics.
 */
export function instrument(metrics: Metrics, commands: readonly CommandRoute[]): MiddlewareHandler<AppEnv> {
	const commandRoutes = commandRoutesOf(commands);
	return async function metricsMiddleware(c, next) {
		const started = performance.now();
		await next();
		const seconds = (performance.now() - started) / 1000;
		const route = matchedRoute(c);
		const method = c.req.method;
		metrics.httpRequests.inc({ method, route, status: c.res.status });
		metrics.httpSeconds.observe({ method, route }, seconds);

		// Any run route (…/stream ones too) and /rpc: the budget refused it before pi (budget.ts).
		if (c.error instanceof GatewayError && c.error.code === "budget_exhausted") {
			const budget = c.error.extra.budget as { exhausted?: string } | undefined;
			metrics.budgetRefusals.inc({ kind: budget?.exhausted ?? "unknown" });
		}
		let command = commandRoutes.get(`${method} ${route}`);
		if (!command || neverSent.has(c.res.status)) return;
		if (command === "rpc") command = rawType(c) ?? "rpc";
		const outcome = c.res.status < 400 ? "ok" : c.error instanceof GatewayError ? c.error.code : "error";
		metrics.commands.inc({ command, outcome });
		// A wait-mode run is as long as the run, not a measure of pi's responsiveness.
		const waited =
			runRoutes.has(command) &&
			requestedWait(c.req.header("prefer"), c.req.query("wait"), Number.POSITIVE_INFINITY) !== undefined &&
			!(c.req.header("accept") ?? "").includes("text/event-stream");
		if (!waited) metrics.commandSeconds.observe({ command }, seconds);
	};
}

/** The template of the route that answered (`/v1/sessions/:id/state`), or `unmatched` (a 404 route). */
function matchedRoute(c: Context): string {
	try {
		const path = routePath(c, -1);
		return path && path !== "*" && path !== "/*" ? path : "unmatched";
	} catch {
		return "unmatched";
	}
}

/** The raw /rpc command's type from the validated body; types pi 1.6 does not know count as `other`. */
function rawType(c: Context): string | undefined {
	const body = (c.req as unknown as { valid(target: "json"): { type?: unknown } | undefined }).valid("json");
	const type = body?.type;
	if (typeof type !== "string") return undefined;
	return Object.hasOwn(commandFields, type) ? type : "other";
}
