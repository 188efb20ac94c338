import { GatewayError } from "../../shared/errors.ts";
import { unwrap } from "../session/pi-answer.ts";
import type { Session } from "../session/session.ts";

/**
 * What a cancel did: `aborted`, the run was pi's current one (or its command was with pi, not yet
 * answered) and pi's abort ended it; `cancelled`, its command still waited in the session's queue
 * and was taken out before pi saw it.
 */
export interface CancelAnswer {
	runId: string;
	state: "aborted" | "cancelled";
}

/** Run ids each session's run commands got (the last `kept`): what tells a settled run from an unknown one. */
const kept = 1000;
const books = new WeakMap<Session, Set<string>>();

/** Notes a run command's id as one of the session's runs. */
export function recordRun(session: Session, runId: string): void {
	const book = books.get(session) ?? new Set<string>();
	books.set(session, book);
	book.add(runId);
	if (book.size > kept) book.delete(book.values().next().value as string);
}

/**
 * Cancels one run of `session`: taken out of the queue when its command has not reached pi yet,
 * else aborted when it is the run in progress (pi's abort, which dismisses its dialogs, as
 * `POST …/abort` does). A run that settled is 409 `run_not_active`; an id the session never
 * gave a run command is 404 `run_not_found`.
 */
export async function cancelRun(session: Session, runId: string): Promise<CancelAnswer> {
	const dropped = new GatewayError(409, "run_cancelled", `Run ${runId} was cancelled before it reached pi`);
	if (session.dropQueued(runId, dropped)) return { runId, state: "cancelled" };
	if (session.currentRunId === runId || session.isInFlight(runId)) {
		unwrap(await session.request({ type: "abort" }));
		return { runId, state: "aborted" };
	}
	if (books.get(session)?.has(runId))
		throw new GatewayError(409, "run_not_active", `Run ${runId} of session ${session.id} is not in progress or queued`);
	throw new GatewayError(404, "run_not_found", `Session ${session.id} has no run ${runId}`);
}
