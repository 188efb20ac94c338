import type { MiddlewareHandler } from "hono";
import type { Cluster } from "../../../cluster/cluster.ts";
import type { StoredSchedule } from "../../../schedules/store.ts";
import type { Fired, FireTick } from "../../../schedules/ticker.ts";
import { jwtPrefix } from "../../auth/jwt-names.ts";
import type { KeyStore } from "../../auth/keys.ts";
import { adminPrincipal, type Principal } from "../../auth/principals.ts";
import type { AppEnv } from "../../transport/openapi.ts";
import { ApiError } from "../../transport/problem.ts";

/** The gateway's own app, answering a request in-process (createApp's `app.fetch`). */
export type AppFetch = (request: Request, env: unknown) => Response | Promise<Response>;

/** Names the tick a prompt is for: `<scheduleId> <tickAt ms>`. Alone it proves nothing (see scheduleTicks). */
export const tickHeader = "x-pi-gateway-schedule-tick";

/** The env key of an in-process tick: only this module can make it, no request from a socket carries it. */
const inProcess = Symbol("schedule tick");

const promptPath = (sessionId: string) => `/v1/sessions/${encodeURIComponent(sessionId)}/prompt`;

/**
 * Sends a tick as `POST …/prompt` through the gateway's own app, in-process, as the schedule's
 * principal: authentication aside, the request meets every check a client's prompt meets (scope,
 * ownership, budget, rate and session limits, audit), a hibernated session wakes as for a prompt,
 * and in cluster mode the routing middleware forwards it to the node that runs the session. The
 * answer becomes the tick's outcome.
 */
export function fireTicks(app: AppFetch, origin: string): FireTick {
	return async (schedule: StoredSchedule, tickAt: number): Promise<Fired> => {
		const body = { message: schedule.message, ...(schedule.whenBusy === "queue" && { streamingBehavior: "followUp" }) };
		const request = new Request(origin + promptPath(schedule.sessionId), {
			method: "POST",
			headers: {
				"content-type": "application/json",
				accept: "application/json",
				[tickHeader]: `${schedule.id} ${tickAt}`,
			},
			body: JSON.stringify(body),
		});
		const res = await app(request, { [inProcess]: schedule });
		const answer = (await res.json().catch(() => ({}))) as {
			runId?: string;
			disposition?: string;
			code?: string;
			detail?: string;
		};
		if (res.status === 200 || res.status === 202)
			return { status: answer.disposition === "queued" ? "queued" : "started", runId: answer.runId ?? null };
		const detail = `${res.status} ${answer.code ?? "error"}: ${answer.detail ?? res.statusText}`;
		if (res.status === 409 && answer.code === "agent_busy") return { status: "skipped", detail };
		const gone = (res.status === 404 && answer.code === "session_not_found") || res.status === 410;
		return { status: "failed", detail, ...(gone && { sessionGone: true }) };
	};
}

/**
 * Authenticates a tick (before the bearer middleware): the principal is the schedule's, taken from
 * the schedule itself, never from the request. An in-process tick carries its schedule in the env;
 * one forwarded by another node (cluster mode: the forward's MAC checks out) must name a tick that
 * is claimed and not answered yet in the shared store, for this very session's prompt. Anything
 * else naming a tick is 401. A principal whose API keys were all revoked has its ticks refused.
 */
export function scheduleTicks(
	pendingTick: (id: string, tickAt: number) => Promise<StoredSchedule | undefined>,
	cluster: (() => Cluster | undefined) | undefined,
	keys: KeyStore | undefined,
): MiddlewareHandler<AppEnv> {
	return async function scheduleTicksMiddleware(c, next) {
		const named = c.req.header(tickHeader);
		if (named === undefined) return next();
		const [id, at] = named.split(" ");
		const local = (c.env as Record<symbol, StoredSchedule | undefined> | undefined)?.[inProcess];
		let schedule: StoredSchedule | undefined;
		if (local) schedule = local.id === id ? local : undefined;
		else if (id && at && /^\d{1,16}$/.test(at) && cluster?.()?.isForwarded(c.req.raw.headers))
			schedule = await pendingTick(id, Number(at));
		const path = new URL(c.req.url).pathname;
		if (!schedule || c.req.method !== "POST" || path !== promptPath(schedule.sessionId))
			throw new ApiError(401, "unauthorized", "This request names a schedule's tick that is not pending");
		c.set("principal", principalOf(schedule.principal, keys));
		return next();
	};
}

/** The schedule's principal as it stands now: the admin, or a key's principal while it holds a key. */
function principalOf(name: string, keys: KeyStore | undefined): Principal {
	if (name === adminPrincipal.name) return adminPrincipal;
	if (keys && !name.startsWith(jwtPrefix) && !keys.hasPrincipal(name))
		throw new ApiError(403, "principal_revoked", `${name} has no API key any more: its schedules do not run`);
	return { name, scopes: new Set(["sessions:read", "sessions:write"]) };
}
