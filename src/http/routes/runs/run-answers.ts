import type { Context } from "hono";
import type { Approval } from "../../../sessions/dialogs/index.ts";
import type { RunAnswer } from "../../../sessions/runs/index.ts";
import type { Session } from "../../../sessions/session/index.ts";
import type { WaitRequest } from "../../transport/wait.ts";

/** An approval that holds a run, with where to answer it. */
const held = (session: Session, approval: Approval) => ({
	id: approval.id,
	url: `/v1/sessions/${session.id}/approvals/${approval.id}`,
	approval,
});

/**
 * The run service's answer as HTTP: 200 with the run's result once it settled (wait mode), else
 * 202 with where to follow the run: accepted, pending (pi had not answered by the deadline), or
 * awaiting_approval with the dialogs that hold it. A waited answer names its fields in the order
 * wait mode always has.
 */
export function runResponse(c: Context, session: Session, answer: RunAnswer, wait?: WaitRequest): Response {
	const { runId } = answer;
	const eventsUrl = `/v1/sessions/${session.id}/events?after=${answer.after}`;
	switch (answer.kind) {
		case "settled":
			if (wait?.applied) c.header("Preference-Applied", wait.applied);
			return c.json({ ...answer.result, runId, disposition: answer.disposition }, 200);
		case "pending":
			return c.json({ runId, eventsUrl, disposition: "pending" }, 202);
		case "held": {
			const approvals = answer.approvals.map((approval) => held(session, approval));
			if (answer.waited) return c.json({ runId, disposition: "awaiting_approval", eventsUrl, approvals }, 202);
			return c.json({ runId, eventsUrl, disposition: "awaiting_approval", approvals }, 202);
		}
		case "accepted":
			if (answer.waited) return c.json({ runId, disposition: answer.disposition, eventsUrl }, 202);
			return c.json({ runId, eventsUrl, disposition: answer.disposition }, 202);
	}
}
