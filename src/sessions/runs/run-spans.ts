import type { LoggedEvent } from "../events/event-log.ts";
import type { Session } from "../session/session.ts";

/**
 * A retried POST of a streamed command is a resume, not a new command (issue 31 item 4).
 * Retrying SSE clients (@microsoft/fetch-event-source, eventsource-client) send the same POST
 * again after a cut, with `Last-Event-ID`; sending it to pi again would start a second run. So
 * each streamed command records the span of the log its stream covers (from just before the
 * command to the event that ended it), and a position gets the rest of the span it lies in, read
 * from the log, and nothing reaches pi (http/streams/resume.ts answers it).
 */

/** The part of a session's log one streamed command's answer covers. */
export interface RunSpan {
	commandId: string;
	/** The stream's start: it holds the events after this. */
	after: number;
	/** The event that ended it, once it has. */
	end?: number;
	/** Which events the stream carried (the bash stream: only its command's). */
	accept?: (event: LoggedEvent) => boolean;
}

/** A span being tracked; `forget()` drops it and its log listener (a command refused before it streamed). */
export interface TrackedSpan extends RunSpan {
	forget(): void;
}

/** Spans kept per session: a retry comes seconds after its cut, not hundreds of commands later. */
const keptSpans = 64;
const spans = new WeakMap<Session, TrackedSpan[]>();

/**
 * Records where the stream of `commandId` ends, watching the log itself, so the answer is known
 * even after the first connection has gone. Call before the command is sent; `ends` is a fresh
 * predicate fed every event from then on (session_exit always ends it).
 */
export function trackSpan(
	session: Session,
	span: Omit<RunSpan, "end">,
	ends: (event: LoggedEvent) => boolean,
): TrackedSpan {
	const list = spans.get(session) ?? [];
	spans.set(session, list);
	const unsubscribe = session.events.subscribe((event) => {
		if (tracked.end !== undefined) return;
		if (ends(event) || event.type === "session_exit") {
			tracked.end = event.seq;
			unsubscribe();
		}
	});
	const tracked: TrackedSpan = {
		...span,
		forget() {
			unsubscribe();
			const at = list.indexOf(tracked);
			if (at !== -1) list.splice(at, 1);
		},
	};
	list.push(tracked);
	// The oldest span goes, and its listener with it (a run that never ended must not hold one forever).
	if (list.length > keptSpans) list.shift()?.forget();
	if (!session.isAlive) {
		tracked.end = session.events.lastSeq;
		unsubscribe();
	}
	return tracked;
}

/** Where a position's recorded span ends, and which of its events the stream carries; undefined when none holds it. */
function spanOf(session: Session, after: number): RunSpan | undefined {
	const list = spans.get(session) ?? [];
	for (let i = list.length - 1; i >= 0; i--) {
		const span = list[i] as TrackedSpan;
		if (span.after < after && (span.end === undefined || after <= span.end)) return span;
	}
	return undefined;
}

const runEnds = new Set(["agent_settled", "run_lost", "session_exit"]);

/**
 * Without a recorded span (another node or an earlier gateway streamed it, or the position came
 * from the session's GET stream), the log decides: the run ends at its next `agent_settled` (or
 * `run_lost`, `session_exit`); a position that is itself a run's end, or an idle session with no
 * end after it, has nothing left.
 */
function spanFromLog(session: Session, after: number): RunSpan | undefined {
	const at = session.events.since(after - 1, 1).events[0];
	if (at?.seq === after && runEnds.has(at.type)) return undefined;
	const end = session.events.since(after).events.find((event) => runEnds.has(event.type));
	if (end) return { commandId: "", after, end: end.seq };
	if (!session.isRunning && session.currentRunId === undefined) return undefined;
	return trackSpan(session, { commandId: session.currentRunId ?? "", after }, (event) => runEnds.has(event.type));
}

/**
 * The span a resumed stream's position lies in (its `end` is set once the span has ended, and
 * may be set later while it goes on); undefined when nothing is left after the position.
 */
export function spanAt(session: Session, after: number): RunSpan | undefined {
	const span = spanOf(session, after) ?? spanFromLog(session, after);
	if (!span || (span.end !== undefined && after >= span.end)) return undefined;
	return span;
}
