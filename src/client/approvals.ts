/**
 * Waiting for a dialog and answering it, over the inbox's long-poll (`GET /v1/approvals
 * ?status=pending&wait=N`): works without holding a stream open, and for every session the
 * credential may read. The inbox answers at once when something is pending; when what is pending
 * belongs to other sessions, the next poll passes `cursor` so that it waits for newer dialogs
 * instead of spinning on the same page.
 */
import type { Transport } from "./http.ts";
import type { Schemas } from "./types.ts";

export type Approval = Schemas["Approval"];
export type ApprovalAnswer = Schemas["ApprovalAnswer"];

export interface NextApprovalOptions {
	/** Only this session's dialogs. */
	sessionId?: string;
	/** Only dialogs this accepts. */
	filter?: (approval: Approval) => boolean;
	/** Seconds each long-poll may be held (1–300, default 30). */
	pollSeconds?: number;
	/** Give up (resolve undefined) after this many milliseconds; default: wait until aborted. */
	timeoutMs?: number;
	signal?: AbortSignal;
}

export class Approvals {
	readonly #transport: Transport;

	constructor(transport: Transport) {
		this.#transport = transport;
	}

	/** The oldest pending dialog that matches, as soon as there is one. */
	async next(options: NextApprovalOptions = {}): Promise<Approval | undefined> {
		const deadline = options.timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.timeoutMs;
		const matches = (a: Approval) =>
			a.status === "pending" &&
			(options.sessionId === undefined || a.sessionId === options.sessionId) &&
			(!options.filter || options.filter(a));
		let cursor: string | undefined;
		for (;;) {
			const left = deadline - Date.now();
			if (left <= 0) return undefined;
			const wait = Math.max(1, Math.min(options.pollSeconds ?? 30, Math.ceil(left / 1000)));
			const page = await this.#transport.json<Schemas["ApprovalList"]>("GET", "/v1/approvals", {
				query: { status: "pending", wait, cursor },
				signal: options.signal,
			});
			const found = page.approvals.find(matches);
			if (found) return found;
			// Everything on this page is someone else's: wait for dialogs opened after it.
			if (page.approvals.length > 0 || page.hasMore) cursor = page.nextCursor;
		}
	}

	/** Answers a dialog; the resolved approval comes back (409 already answered, 410 expired, 422 a value that does not fit). */
	answer(
		approval: Pick<Approval, "id" | "sessionId">,
		answer: ApprovalAnswer,
		signal?: AbortSignal,
	): Promise<Approval> {
		return this.#transport.json<Approval>("POST", "/v1/sessions/{id}/approvals/{approvalId}", {
			path: { id: approval.sessionId, approvalId: approval.id },
			body: answer,
			signal,
		});
	}

	/** Waits for the next matching dialog and answers it with what `decide` returns. */
	async answerNext(
		decide: (approval: Approval) => ApprovalAnswer | Promise<ApprovalAnswer>,
		options: NextApprovalOptions = {},
	): Promise<Approval | undefined> {
		const approval = await this.next(options);
		if (!approval) return undefined;
		return this.answer(approval, await decide(approval), options.signal);
	}
}
