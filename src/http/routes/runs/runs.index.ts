import type { Context } from "hono";
import type { PiCommand } from "../../../pi/protocol.ts";
import type { LoggedEvent } from "../../../sessions/events/index.ts";
import { RunCollector, type RunControls, RunWatch, superviseRun } from "../../../sessions/runs/index.ts";
import type { Session } from "../../../sessions/session/index.ts";
import { streamCommand, wantsStream } from "../../streams/command-stream.ts";
import { sseOptions } from "../../streams/options.ts";
import { resumePosition, resumeStream } from "../../streams/resume.ts";
import type { SseOptions } from "../../streams/sse.ts";
import { createRouter } from "../../transport/openapi.ts";
import { ApiError } from "../../transport/problem.ts";
import { requestedWait, type WaitRequest } from "../../transport/wait.ts";
import type { Deps } from "../deps.ts";
import { type Acceptance, pendingApprovals, sendUntilHeld } from "./held.ts";
import { followUp, prompt, steer } from "./runs.routes.ts";

type RunCommand = PiCommand & { id: string };

/** Accept: text/event-stream — the run's events from this command to the run's end. */
export function streamRun(c: Context, sse: SseOptions, session: Session, command: RunCommand): Promise<Response> {
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
	return streamCommand(c, sse, { session, command, open: { runId: command.id }, until, commitEarly, spanEnds });
}

/**
 * Prefer: wait — 200 with the run's result once it ends, or 202 with where to follow it: at the
 * deadline (even while pi has not answered the command yet) or at once when a dialog holds pi's
 * answer.
 */
async function waitRun(c: Context, session: Session, command: RunCommand, wait: WaitRequest): Promise<Response> {
	const deadline = Date.now() + wait.ms;
	const startSeq = session.events.lastSeq;
	const watch = new RunWatch(session, command.id);
	const collector = new RunCollector(command.id, startSeq);
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
		if (accepted.kind !== "answered") return accepted202(c, session, command, startSeq, accepted);
		const data = accepted.data as { disposition?: string } | undefined;
		const runId = runOf(session, command, data?.disposition);
		const timedOut = new Promise<boolean>((resolve) => {
			timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()));
		});
		c.req.raw.signal.addEventListener("abort", onAbort);
		const finished = await Promise.race([over, timedOut]);
		const disposition = watch.disposition ?? data?.disposition ?? "queued";
		if (watch.outcome === "exited") {
			throw new ApiError(502, "pi_exited", `Session ${session.id} exited before the run settled`);
		}
		if (!finished || watch.outcome === "idle" || !watch.outcome) {
			// A dialog that opened during the run holds it: say so, as the early answer does.
			const approvals = watch.outcome ? [] : pendingApprovals(session);
			if (approvals.length > 0)
				return c.json(
					{ runId, disposition: "awaiting_approval", eventsUrl: eventsUrl(session, startSeq), approvals },
					202,
				);
			return c.json({ runId, disposition, eventsUrl: eventsUrl(session, startSeq) }, 202);
		}
		if (wait.applied) c.header("Preference-Applied", wait.applied);
		return c.json({ ...collector.result(), runId, disposition }, 200);
	} finally {
		clearTimeout(timer);
		c.req.raw.signal.removeEventListener("abort", onAbort);
		unsubscribe();
	}
}

/** The default answer: 202 once pi accepted the command, or at once when a dialog holds pi's answer. */
async function acceptRun(c: Context, session: Session, command: RunCommand): Promise<Response> {
	const startSeq = session.events.lastSeq;
	const accepted = await sendUntilHeld(session, command);
	return accepted202(c, session, command, startSeq, accepted);
}

function accepted202(c: Context, session: Session, command: RunCommand, startSeq: number, accepted: Acceptance) {
	const base = { runId: command.id, eventsUrl: eventsUrl(session, startSeq) };
	if (accepted.kind === "held")
		return c.json({ ...base, disposition: "awaiting_approval", approvals: accepted.approvals }, 202);
	if (accepted.kind === "late") return c.json({ ...base, disposition: "pending" }, 202);
	const data = accepted.data as { disposition?: string } | undefined;
	return c.json(
		{ ...base, runId: runOf(session, command, data?.disposition), disposition: data?.disposition ?? "queued" },
		202,
	);
}

/**
 * The run a command is part of, as pi accepted it: its own when it started one; the active run when
 * pi queued it into that run (a steer or follow-up: its turns, and what they change, are that run's);
 * else its own id (with no run active, a steer or follow-up waits for the next prompt's run). An
 * attacker's review got a follow-up's own id, which `…/changes?runId=` did not know, while its
 * write was in the run it joined.
 */
const runOf = (session: Session, command: RunCommand, disposition: string | undefined): string =>
	disposition !== "started" && session.currentRunId !== undefined ? session.currentRunId : command.id;

const eventsUrl = (session: Session, after: number) => `/v1/sessions/${session.id}/events?after=${after}`;

/** pi's fields become the command; outputSchema and limits become watches on its run (run-supervisor.ts). */
export function supervise(session: Session, type: string, body: unknown) {
	const { outputSchema, limits, ...fields } = body as Record<string, unknown> & RunControls;
	const command = { type, ...fields, id: session.nextCommandId() } as RunCommand;
	return superviseRun(session, command, { outputSchema, limits });
}

/** Sending failed (queue full, pi gone, budget spent): the run's watches go with it. */
export const disposing = (dispose: () => void) => (error: unknown) => {
	dispose();
	throw error;
};

export function runsRouter({ registry, config }: Deps) {
	const sse = sseOptions(config);
	/** One run command: streamed (Accept: text/event-stream), waited for (Prefer: wait) or accepted (202). */
	const run = (c: Context, type: RunCommand["type"], body: Record<string, unknown>): Promise<Response> => {
		const session = registry.get(c.req.param("id") as string);
		// A retried POST (Last-Event-ID) resumes the stream it lost: nothing reaches pi.
		const resumeAt = resumePosition(c);
		if (resumeAt !== undefined) return Promise.resolve(resumeStream(c, sse, session, resumeAt));
		const { command, dispose } = supervise(session, type, body);
		const answer = () => {
			if (wantsStream(c)) return streamRun(c, sse, session, command);
			const wait = requestedWait(c.req.header("prefer"), c.req.query("wait"), config.waitTimeoutMs);
			if (wait) return waitRun(c, session, command, wait);
			return acceptRun(c, session, command);
		};
		return answer().catch(disposing(dispose));
	};
	// The input is typed by the route; the answer is one of three (SSE, 200 result, 202 accepted)
	// built by the helpers above as plain Responses, which hono's typed responses cannot name.
	return createRouter()
		.openapi(prompt, (c) => run(c, "prompt", c.req.valid("json")) as never)
		.openapi(steer, (c) => run(c, "steer", c.req.valid("json")) as never)
		.openapi(followUp, (c) => run(c, "follow_up", c.req.valid("json")) as never);
}
