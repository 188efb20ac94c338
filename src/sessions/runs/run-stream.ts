import { GatewayError } from "../../shared/errors.ts";
import type { LoggedEvent } from "../events/event-log.ts";
import { follow } from "../events/follower.ts";
import { unwrap } from "../session/pi-answer.ts";
import type { Session } from "../session/session.ts";
import type { RunCommand } from "./run-accept.ts";
import { RunWatch, responseId } from "./run-result.ts";
import { trackSpan } from "./run-spans.ts";

/** Where a streamed command's answer goes, in this order: open, events, end (a failure before the end). */
export interface CommandStreamSink {
	/** First, before anything is sent: the stream holds the log's events after `after`; `commandId` names the command. */
	open(after: number, commandId: string): void;
	/** The next event, each once and in log order (`session_exit` and `run_lost` always come). */
	event(event: LoggedEvent): void;
	/** After the last event: the run's (or command's) end, or the session's. */
	end(): void;
	/** pi's answer failed once the stream had begun (a gateway failure: 504, 502): the stream's last word. */
	failed(error: GatewayError): void;
}

/** Which events a command's stream carries, and where it ends. */
interface CommandStreamPlan {
	command: RunCommand;
	/** Which events reach the client (default: all of the session's). */
	accept?: (event: LoggedEvent) => boolean;
	/** The stream ends after this event. */
	until: (event: LoggedEvent) => boolean;
	/**
	 * Resolves when the answer must become a stream before pi's response: pi holds the response
	 * while a dialog waits for an answer, and a bash command answers only once it has finished.
	 */
	commitEarly: Promise<void>;
	/** A fresh copy of `until` for the span a resumed POST replays (run-spans.ts). */
	spanEnds: (event: LoggedEvent) => boolean;
}

/** A next-macrotask promise: by then a command that fails at once (queue full, pi gone) has failed. */
const nextTick = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Subscribes first, then sends the command, so the stream holds everything from the moment pi
 * sees it. While pi has not answered, a refusal rejects (nothing streamed, the subscription
 * released); once the stream has begun, pi's answer arrives as its `response` event and a gateway
 * failure as `sink.failed`. Resolves with the stream's idempotent release.
 */
async function streamCommand(session: Session, plan: CommandStreamPlan, sink: CommandStreamSink) {
	const { command } = plan;
	const after = session.events.lastSeq;
	sink.open(after, command.id);
	const following = follow(session, { after, accept: plan.accept, until: plan.until }, sink);
	const span = trackSpan(session, { commandId: command.id, after, accept: plan.accept }, plan.spanEnds);
	const request = session.request(command);
	const first = await Promise.race([
		request.then(
			(response) => ({ response }),
			(error: unknown) => ({ error }),
		),
		plan.commitEarly.then(() => undefined),
	]);
	if (first) {
		try {
			if ("error" in first) throw first.error;
			unwrap(first.response);
		} catch (error) {
			following.release();
			// Refused before any stream began: nothing to resume, and no answer will ever end the span.
			span.forget();
			throw error;
		}
	} else {
		request.catch((error: unknown) => {
			sink.failed(error instanceof GatewayError ? error : new GatewayError(500, "internal_error", String(error)));
		});
	}
	return following.release;
}

/** A run command's stream: the run's events from this command to the run's end. */
export function streamRun(session: Session, command: RunCommand, sink: CommandStreamSink): Promise<() => void> {
	const watch = new RunWatch(session, command.id);
	let dialogOpened!: () => void;
	const commitEarly = new Promise<void>((resolve) => {
		dialogOpened = resolve;
	});
	const until = (event: LoggedEvent) => {
		// An extension command's dialog holds pi's response: the client must see it to answer it.
		if (!watch.responded && event.type === "approval_requested") dialogOpened();
		return watch.feed(event);
	};
	const spanWatch = new RunWatch(session, command.id);
	const spanEnds = (event: LoggedEvent) => spanWatch.feed(event);
	return streamCommand(session, { command, until, commitEarly, spanEnds }, sink);
}

/**
 * A command that is not a run but streams events of its own (`bash` → `bash_execution_update`,
 * which pi tags with the command's id): those events, then pi's response to it, then the end.
 */
export function streamCommandEvents(
	session: Session,
	type: string,
	fields: Record<string, unknown>,
	eventType: string,
	sink: CommandStreamSink,
): Promise<() => void> {
	const id = session.nextCommandId();
	// pi writes `"id":"<id>"` unescaped only as a key of the event itself: quotes inside strings are escaped.
	const tag = `"id":"${id}"`;
	const ours = (event: LoggedEvent) =>
		(event.type === eventType && event.data.includes(tag)) || (event.type === "response" && responseId(event) === id);
	const answered = (event: LoggedEvent) => event.type === "response" && responseId(event) === id;
	return streamCommand(
		session,
		{
			command: { ...fields, type, id },
			accept: ours,
			until: answered,
			commitEarly: nextTick(),
			spanEnds: answered,
		},
		sink,
	);
}
