import type { MiddlewareHandler } from "hono";
import { routePattern } from "./route-pattern.ts";

/**
 * Which requests to a session wait for its first snapshot (change tracking's "since the session
 * started"), so that nothing they change slips into it: every operation but reads, except those
 * named here by operation id and read off the API document (as body-guard.ts and idempotency.ts
 * read theirs). An operation not named waits: a new route is on the safe side until it says otherwise.
 */

/**
 * Change no file of the folder: DELETE stops the snapshot in progress instead (tracker.forget); an
 * abort (or a run's cancel) must not wait behind git; a fork only reads the folder.
 */
export const changeNoFile = new Set([
	"sessions.delete",
	"sessions.forkSession",
	"sessions.abort",
	"sessions.abortRetry",
	"sessions.abortBash",
	"sessions.cancelRun",
]);

/**
 * Change files only through the run's tool calls, which pi's snapshot gate holds until the
 * snapshots are taken: when pi has the gate, these go to it at once.
 */
export const heldByTheGate = new Set([
	"sessions.prompt",
	"sessions.promptStream",
	"sessions.steer",
	"sessions.steerStream",
	"sessions.followUp",
	"sessions.followUpStream",
]);

type Waits = "never" | "unless-gated";

interface Document {
	paths?: Record<string, Record<string, { operationId?: string }>>;
}

export class FirstSnapshotRoutes {
	#routes: { method: string; path: RegExp; waits: Waits }[] = [];

	load(document: Document): void {
		this.#routes = [];
		for (const [template, operations] of Object.entries(document.paths ?? {})) {
			const pattern = routePattern(template);
			for (const [method, operation] of Object.entries(operations)) {
				const id = operation.operationId ?? "";
				const waits: Waits | undefined = changeNoFile.has(id)
					? "never"
					: heldByTheGate.has(id)
						? "unless-gated"
						: undefined;
				if (waits) this.#routes.push({ method: method.toUpperCase(), path: pattern, waits });
			}
		}
	}

	/** Whether a request waits for its session's first snapshot. */
	waits(method: string, path: string, gated: boolean): boolean {
		if (method === "GET" || method === "HEAD") return false;
		const route = this.#routes.find((r) => r.method === method && r.path.test(path));
		if (!route) return true;
		return route.waits === "unless-gated" && !gated;
	}
}

/** Holds each request that waits (above) until its session's first snapshot is taken. */
export function firstSnapshot(
	routes: FirstSnapshotRoutes,
	tracker: { readonly gated: boolean; ensureBase(id: string): Promise<void> },
): MiddlewareHandler {
	return async function firstSnapshotWait(c, next) {
		const id = c.req.param("id");
		if (id !== undefined && routes.waits(c.req.method, c.req.path, tracker.gated)) await tracker.ensureBase(id);
		return next();
	};
}
