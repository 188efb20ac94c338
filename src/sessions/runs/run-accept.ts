import type { PiCommand } from "../../pi/protocol.ts";
import type { Approval } from "../dialogs/approvals.ts";
import { eventJson } from "../events/event-log.ts";
import { unwrap } from "../session/pi-answer.ts";
import type { Session } from "../session/session.ts";
import { responseId } from "./run-result.ts";

/** A command on its way to pi, with the id its response and events will carry. */
export type RunCommand = PiCommand & { id: string };

/**
 * What became of a command by the time its caller must hear something: pi answered (`data`), a
 * dialog opened first (pi answers an extension command only once its dialogs are answered, and
 * the caller cannot answer what it does not know about), or the caller's deadline came first.
 */
export type Acceptance =
	| { kind: "answered"; data: unknown }
	| { kind: "held"; approvals: Approval[] }
	| { kind: "late" };

/** The session's pending dialogs: at a waited run's deadline they are what holds it. */
export const pendingApprovals = (session: Session): Approval[] => session.approvals.list("pending");

/**
 * Sends `command` and resolves as soon as one of the three happens. A refusal before any of
 * them is thrown; after "held" or "late" the command goes on in the session and its outcome is
 * pi's `response` event on the session's log.
 */
export async function sendUntilHeld(session: Session, command: RunCommand, deadline?: number): Promise<Acceptance> {
	const approvals: Approval[] = [];
	let held!: () => void;
	const dialog = new Promise<Acceptance>((resolve) => {
		held = () => resolve({ kind: "held", approvals });
	});
	// Subscribed before the command is sent, so a dialog that opens at once is seen.
	// Log order decides, not promise timing: pi's response and a dialog of the run it started can
	// arrive in one read, and the response's promise settles a few microtasks after both are logged.
	let responded = false;
	const unsubscribe = session.events.subscribe((event) => {
		if (event.type === "response" && responseId(event) === command.id) responded = true;
		if (responded || event.type !== "approval_requested") return;
		approvals.push(eventJson<{ approval: Approval }>(event).approval);
		held();
	});
	let timer: NodeJS.Timeout | undefined;
	const late =
		deadline === undefined
			? new Promise<never>(() => {})
			: new Promise<Acceptance>((resolve) => {
					timer = setTimeout(() => resolve({ kind: "late" }), Math.max(0, deadline - Date.now()));
				});
	const request = session.request(command);
	// Once the caller has its answer, a later failure (504, pi gone) is on the stream, not unhandled.
	request.catch(() => {});
	try {
		return await Promise.race([
			request.then((response): Acceptance => ({ kind: "answered", data: unwrap(response) })),
			dialog,
			late,
		]);
	} finally {
		clearTimeout(timer);
		unsubscribe();
	}
}

/**
 * The run a command is part of, as pi accepted it: its own when it started one; the active run when
 * pi queued it into that run (a steer or follow-up: its turns, and what they change, are that run's);
 * else its own id (with no run active, a steer or follow-up waits for the next prompt's run). An
 * attacker's review got a follow-up's own id, which `…/changes?runId=` did not know, while its
 * write was in the run it joined.
 */
export const runOf = (session: Session, command: RunCommand, disposition: string | undefined): string =>
	disposition !== "started" && session.currentRunId !== undefined ? session.currentRunId : command.id;
