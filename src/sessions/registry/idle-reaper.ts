import type { Session } from "../session/session.ts";

/**
 * Idle past --idle-timeout: a persistent session hibernates (`stopped`, resumed on demand), an
 * ephemeral one is stopped and `reaped` (forgotten, its id answering 410). `skip` keeps a session
 * that is waking, or every session while the gateway stops.
 */
export function reapIdle(
	idleTimeoutMs: number,
	sessions: Iterable<[string, Session]>,
	skip: (id: string) => boolean,
	reaped: (id: string) => void,
): void {
	const cutoff = Date.now() - idleTimeoutMs;
	for (const [id, session] of sessions) {
		if (skip(id) || session.lastActivityAt > cutoff || !session.isQuiet) continue;
		if (session.resumable) {
			void session.stop("idle");
			continue;
		}
		void session.stop("idle").then(() => reaped(id));
	}
}
