import type { LoggedEvent } from "../events/event-log.ts";
import type { Session } from "../session/session.ts";
import type { Journal } from "./journal.ts";

/** Events after which a session's record is written at once (what a node taking it over must know). */
const journalledAtOnce = new Set([
	"approval_requested",
	"approval_resolved",
	"tool_call_requested",
	"tool_call_resolved",
	"agent_start",
]);

/**
 * When a session's state reaches the store beyond the periodic flush: at its exit, at the events
 * a node taking it over must know, after a settle, and (its conversation) at every settled run.
 */
export function journalOnEvents(session: Session, journal: Journal, exited: () => void): (event: LoggedEvent) => void {
	return (event) => {
		if (event.type === "session_exit") {
			exited();
			journal.save(session);
		}
		// Written at once: a node taking the session over must know which dialogs died with this one,
		// and a gateway started after an unclean stop which run did (its id is set by its start).
		if (journalledAtOnce.has(event.type)) journal.save(session);
		// Once the session has taken the settle in (it clears the run after its listeners).
		if (event.type === "agent_settled") queueMicrotask(() => journal.save(session));
		// The conversation leaves this node's disk at every settled run and when pi stops
		// (hibernation, shutdown), so another disk can continue it.
		if (event.type === "agent_settled" || event.type === "session_exit") journal.saveConversation(session);
	};
}
