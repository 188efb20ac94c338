import type { PiCommand } from "../../../pi/protocol.ts";
import type { Approval } from "../../../sessions/dialogs/index.ts";
import { eventJson } from "../../../sessions/events/index.ts";
import { responseId } from "../../../sessions/runs/index.ts";
import type { Session } from "../../../sessions/session/index.ts";
import { unwrap } from "../../transport/pi-result.ts";

/** An approval that holds pi's answer, with where to answer it. */
export interface HeldApproval {
	id: string;
	url: string;
	approval: Approval;
}

const toHeld = (session: Session, approval: Approval): HeldApproval => ({
	id: approval.id,
	url: `/v1/sessions/${session.id}/approvals/${approval.id}`,
	approval,
});

/** The session's pending dialogs: at a waited run's deadline they are what holds it. */
export const pendingApprovals = (session: Session): HeldApproval[] =>
	session.approvals.list("pending").map((approval) => toHeld(session, approval));

/**
 * What became of a command by the time its caller must hear something: pi answered (`data`), a
 * dialog opened first (pi answers an extension command only once its dialogs are answered, and
 * the caller cannot answer what it does not know about), or the caller's deadline came first.
 */
export type Acceptance =
	| { kind: "answered"; data: unknown }
	| { kind: "held"; approvals: HeldApproval[] }
	| { kind: "late" };

/**
 * Sends `command` and resolves as soon as one of the three happens. A refusal before any of
 * them is thrown (an HTTP error); after "held" or "late" the command goes on in the session and
 * its outcome is pi's `response` event on the session's stream.
 */
export async function sendUntilHeld(
	session: Session,
	command: PiCommand & { id: string },
	deadline?: number,
): Promise<Acceptance> {
	const approvals: HeldApproval[] = [];
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
		const { approval } = eventJson<{ approval: Approval }>(event);
		approvals.push(toHeld(session, approval));
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
