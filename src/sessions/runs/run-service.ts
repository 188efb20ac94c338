import { GatewayError } from "../../shared/errors.ts";
import type { Approval } from "../dialogs/approvals.ts";
import type { Session } from "../session/session.ts";
import { type Acceptance, pendingApprovals, type RunCommand, runOf, sendUntilHeld } from "./run-accept.ts";
import { recordRun } from "./run-cancel.ts";
import { RunCollector, type RunResult, RunWatch } from "./run-result.ts";
import { type CommandStreamSink, streamRun } from "./run-stream.ts";
import { type RunControls, superviseRun } from "./run-supervisor.ts";

/**
 * What a caller of a run command hears, whichever way it asked (the transport maps each to its
 * answer). Every one names the run and where its events start on the session's log (`after`).
 * `waited`: pi had accepted the command and the caller waited for the run's end (wait mode),
 * which did not come before the deadline.
 */
export type RunAnswer =
	/** pi accepted the command (`disposition`: started, queued, handled); the run goes on. */
	| { kind: "accepted"; runId: string; after: number; disposition: string; waited: boolean }
	/** A dialog holds it: pi's answer waits for it, or (waited) the run does. */
	| { kind: "held"; runId: string; after: number; approvals: Approval[]; waited: boolean }
	/** The caller's deadline came before pi's answer: the command goes on in the session. */
	| { kind: "pending"; runId: string; after: number }
	/** The run ended: its result. */
	| { kind: "settled"; runId: string; after: number; disposition: string; result: RunResult };

/** A run command whose watches are set and which is not sent yet: ask for one answer, once. */
export interface PreparedRun {
	readonly command: RunCommand;
	/** Resolves once pi accepted the command, or at once when a dialog holds pi's answer. */
	accept(): Promise<RunAnswer>;
	/** Resolves with the run's result once it ends, or what holds it at the deadline (or when `signal` aborts). */
	wait(ms: number, signal: AbortSignal): Promise<RunAnswer>;
	/** The run's events into `sink`; resolves with the stream's release once the answer is a stream. */
	stream(sink: CommandStreamSink): Promise<() => void>;
}

/**
 * pi's fields become the command; outputSchema and limits become watches on its run
 * (run-supervisor.ts: a schema that is not one throws here, nothing sent). When sending fails
 * (queue full, pi gone, budget spent) the run's watches go with it.
 */
export function prepareRun(session: Session, type: string, body: unknown): PreparedRun {
	const { outputSchema, limits, ...fields } = body as Record<string, unknown> & RunControls;
	const planned = { type, ...fields, id: session.nextCommandId() } as RunCommand;
	const { command, dispose } = superviseRun(session, planned, { outputSchema, limits });
	recordRun(session, command.id);
	const disposing = <T>(answer: Promise<T>): Promise<T> =>
		answer.catch((error: unknown) => {
			dispose();
			throw error;
		});
	return {
		command,
		accept: () => disposing(acceptRun(session, command)),
		wait: (ms, signal) => disposing(waitRun(session, command, ms, signal)),
		stream: (sink) => disposing(streamRun(session, command, sink)),
	};
}

/** The answer when pi has answered, a dialog holds its answer, or the deadline came first. */
function acceptance(session: Session, command: RunCommand, after: number, accepted: Acceptance): RunAnswer {
	const runId = command.id;
	if (accepted.kind === "held") return { kind: "held", runId, after, approvals: accepted.approvals, waited: false };
	if (accepted.kind === "late") return { kind: "pending", runId, after };
	const disposition = (accepted.data as { disposition?: string } | undefined)?.disposition;
	return {
		kind: "accepted",
		runId: runOf(session, command, disposition),
		after,
		disposition: disposition ?? "queued",
		waited: false,
	};
}

async function acceptRun(session: Session, command: RunCommand): Promise<RunAnswer> {
	const after = session.events.lastSeq;
	return acceptance(session, command, after, await sendUntilHeld(session, command));
}

/**
 * The run's result once it ends, or what it is at the deadline (even while pi has not answered
 * the command yet), or at once when a dialog holds pi's answer. pi exiting first is 502.
 */
async function waitRun(session: Session, command: RunCommand, ms: number, signal: AbortSignal): Promise<RunAnswer> {
	const deadline = Date.now() + ms;
	const after = session.events.lastSeq;
	const watch = new RunWatch(session, command.id);
	const collector = new RunCollector(command.id, after);
	let ended!: () => void;
	const over = new Promise<boolean>((resolve) => {
		ended = () => resolve(true);
	});
	// Subscribed before the command is sent, so even a run that ends at once is seen whole.
	const unsubscribe = session.events.subscribe((event) => {
		if (watch.outcome) return;
		collector.add(event);
		if (watch.feed(event)) ended();
	});
	let timer: NodeJS.Timeout | undefined;
	const onAbort = () => ended();
	try {
		const accepted = await sendUntilHeld(session, command, deadline);
		if (accepted.kind !== "answered") return acceptance(session, command, after, accepted);
		const data = accepted.data as { disposition?: string } | undefined;
		const runId = runOf(session, command, data?.disposition);
		const timedOut = new Promise<boolean>((resolve) => {
			timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()));
		});
		signal.addEventListener("abort", onAbort);
		const finished = await Promise.race([over, timedOut]);
		const disposition = watch.disposition ?? data?.disposition ?? "queued";
		if (watch.outcome === "exited") {
			throw new GatewayError(502, "pi_exited", `Session ${session.id} exited before the run settled`);
		}
		if (!finished || watch.outcome === "idle" || !watch.outcome) {
			// A dialog that opened during the run holds it: say so, as the early answer does.
			const approvals = watch.outcome ? [] : pendingApprovals(session);
			if (approvals.length > 0) return { kind: "held", runId, after, approvals, waited: true };
			return { kind: "accepted", runId, after, disposition, waited: true };
		}
		return { kind: "settled", runId, after, disposition, result: collector.result() };
	} finally {
		clearTimeout(timer);
		signal.removeEventListener("abort", onAbort);
		unsubscribe();
	}
}
