import type { Session } from "../session/session.ts";

/** How long a session may idle before its pi goes, by kind (ms; 0: never). */
export interface IdleTimeouts {
	/** A persistent session hibernates (`stopped`, resumed on demand): --idle-timeout-ms. */
	persistent: number;
	/** An ephemeral one cannot, so it is stopped and `reaped`: --ephemeral-idle-timeout-ms. */
	ephemeral: number;
}

/** How often to look for idle sessions: a quarter of the shorter timeout, within 50 ms..30 s; undefined for none. */
export function reapEveryMs({ persistent, ephemeral }: IdleTimeouts): number | undefined {
	const shortest = Math.min(...[persistent, ephemeral].filter((ms) => ms > 0));
	return Number.isFinite(shortest) ? Math.min(Math.max(shortest / 4, 50), 30_000) : undefined;
}

/**
 * Idle past its timeout: a persistent session hibernates (`stopped`, resumed on demand), an
 * ephemeral one is stopped and `reaped` (forgotten, its id answering 410). Only a quiet session
 * goes (Session.isQuiet: no run, no dialog or client tool call waiting, nothing queued); an open
 * event stream does not hold it (the stream gets `session_exit` with `resumable`). `skip` keeps a
 * session that is waking, or every session while the gateway stops.
 */
export function reapIdle(
	timeouts: IdleTimeouts,
	sessions: Iterable<[string, Session]>,
	skip: (id: string) => boolean,
	reaped: (id: string) => void,
): void {
	const now = Date.now();
	for (const [id, session] of sessions) {
		const resumable = session.resumable;
		const timeout = resumable ? timeouts.persistent : timeouts.ephemeral;
		if (timeout <= 0 || skip(id) || session.lastActivityAt > now - timeout || !session.isQuiet) continue;
		if (resumable) {
			void session.stop("idle");
			continue;
		}
		void session.stop("idle").then(() => reaped(id));
	}
}
