// Over 300 lines on purpose: the approval resource and its one-winner answer rules (409/410/422,
// expiry, cancel on abort and exit) belong together; the schema is the shape those rules return.
import { z } from "@hono/zod-openapi";
import { type DialogRequest, dialogMethods } from "../../pi/protocol.ts";
import { GatewayError } from "../../shared/errors.ts";

export const ApprovalStatus = z.enum(["pending", "answered", "expired", "cancelled"]).openapi("ApprovalStatus", {
	description:
		"`pending`: waiting for an answer; `answered`: a client or a policy answered; `expired`: pi's own timeout ran out; `cancelled`: the gateway gave up on it (its timeout, an abort, pi's exit)",
});
const confirmed = z.boolean().describe("A confirm dialog's answer: yes (`true`) or no (`false`)");
const value = z.string().describe("A select dialog's option, or the text of an input or editor dialog");

const by = z.string().min(1).max(200).optional().openapi({
	description:
		"A free-text note on who answers, kept as `note`; `resolvedBy` is the authenticated principal (with --no-auth, this)",
});
const remember = z.literal("session").optional().openapi({
	description:
		'`session`: "allow always for this session" — the same answer is given at once to this session\'s later dialogs with the same method and title (a session policy rule)',
});

export const ApprovalAnswer = z
	.union(
		[
			z.strictObject({ confirmed, by, remember }),
			z.strictObject({ value, by, remember }),
			z.strictObject({ cancelled: z.literal(true).describe("Dismiss the dialog (pi gets its default)"), by }),
		],
		{
			error:
				"An answer is one of {confirmed: boolean}, {value: string} or {cancelled: true} (each with an optional by)",
		},
	)
	.openapi("ApprovalAnswer", {
		description:
			"`confirmed` answers a confirm dialog, `value` a select (one of its options) or an input/editor (any text), `cancelled: true` dismisses any dialog. `by` records who answered.",
		example: { value: "Allow", by: "alice" },
	});
export type ApprovalAnswer = z.infer<typeof ApprovalAnswer>;

/** Who settles an approval when no client answered it. */
export const resolvers = {
	piTimeout: "pi-timeout",
	policy: "gateway-policy",
	abort: "gateway-abort",
	exit: "pi-exit",
	limit: "gateway-limit",
} as const;

/** A pending approval, for the spec's examples. */
export const approvalExample = {
	id: "3f1c2a9e-5d7b-4c1e-9a0f-6b8d2e4f1a3c",
	sessionId: "ses_Qm9wYXJ0aWFs",
	method: "select",
	title: "Allow this bash command?\n\n  rm -rf ./pi-gateway-scratch && echo removed",
	options: ["Allow", "Block"],
	createdAt: "2026-12-01T10:00:02.000Z",
	expiresAt: null,
	status: "pending",
	answer: null,
	resolvedAt: null,
	resolvedBy: null,
};

export const Approval = z
	.object({
		id: z.string().openapi({ description: "pi's dialog id" }),
		sessionId: z.string().describe("The session whose pi opened it"),
		method: z.enum(dialogMethods).describe("The kind of dialog, which says how to answer it"),
		title: z.string().describe("What the dialog asks"),
		message: z.string().optional().openapi({ description: "confirm only" }),
		options: z.array(z.string()).optional().openapi({ description: "select only: the allowed values" }),
		placeholder: z.string().optional().openapi({ description: "input only" }),
		prefill: z.string().optional().openapi({ description: "editor only" }),
		createdAt: z.string().openapi({ format: "date-time", description: "When it opened" }),
		expiresAt: z.string().nullable().openapi({
			format: "date-time",
			description:
				"When it stops waiting unanswered: just before pi's own `timeout` runs out (→ expired; pi gets `cancelled`, which gives the extension the same default) or at the gateway's approvalTimeoutMs (→ cancelled); null if never",
		}),
		status: ApprovalStatus,
		answer: z
			.object({
				confirmed: confirmed.optional(),
				value: value.optional(),
				cancelled: z.boolean().optional().describe("The dialog was dismissed"),
			})
			.nullable()
			.openapi({ description: "The answer a client posted; null while pending or when nobody answered" }),
		resolvedAt: z
			.string()
			.nullable()
			.openapi({ format: "date-time", description: "When it was answered, expired or cancelled; null while pending" }),
		resolvedBy: z
			.string()
			.nullable()
			.openapi({
				description: `Who settled it: the answer's \`by\` (default \`api\`), or when nobody answered: \`${resolvers.piTimeout}\`, \`${resolvers.policy}\` (approvalTimeoutMs), \`${resolvers.abort}\` (the run was aborted), \`${resolvers.exit}\` (pi exited) or \`${resolvers.limit}\` (refused as it opened: the session had --max-pending-dialogs pending already; \`note\` says so)`,
			}),
		note: z.string().optional().openapi({
			description:
				"The answer's free-text `by`, when the answerer was an authenticated principal; for `gateway-limit`, why the gateway refused the dialog",
		}),
	})
	.openapi("Approval", {
		description: "An extension's dialog (select, confirm, input, editor) as a resource a client answers",
		example: approvalExample,
	});
export type Approval = z.infer<typeof Approval>;

export interface ApprovalEvents {
	requested(approval: Approval): void;
	/** `response` is the line pi must get; absent when pi is gone. */
	resolved(approval: Approval, response: Record<string, unknown> | undefined): void;
}

/** Settled approvals kept per session (the oldest go first); pending ones are always kept. */
const keepSettled = 1000;
/** pi's clock for a timed dialog starts before its request reaches us: expire this much early. */
const expiryMarginMs = 100;
/** Gateway-wide creation order: the inbox sorts and pages by it (createdAt ties within a ms). */
let lastSeq = 0;
const seqs = new WeakMap<Approval, number>();
export const approvalSeq = (approval: Approval): number => seqs.get(approval) ?? 0;

/**
 * A session's extension dialogs as resources. Every state change is synchronous, so of two
 * concurrent answers exactly one finds the approval pending.
 */
export class Approvals {
	readonly #sessionId: string;
	readonly #events: ApprovalEvents;
	readonly #policyTimeoutMs: number;
	readonly #items = new Map<string, Approval>();
	readonly #timers = new Map<string, NodeJS.Timeout>();
	/** Dialogs a dead node's pi opened (cluster mode): nobody can answer them any more. */
	readonly #lost = new Set<string>();
	/** Dialogs pending at once at most (--max-pending-dialogs): past it a new one is refused as it opens. */
	readonly #maxPending: number;
	#pending = 0;

	constructor(sessionId: string, events: ApprovalEvents, policyTimeoutMs = 0, maxPending = Number.POSITIVE_INFINITY) {
		this.#sessionId = sessionId;
		this.#events = events;
		this.#policyTimeoutMs = policyTimeoutMs;
		this.#maxPending = maxPending;
	}

	get pendingCount(): number {
		return this.#pending;
	}

	open(request: DialogRequest): Approval {
		const now = Date.now();
		// pi's types give an editor no timeout; read it wherever pi sends one.
		const timeout = "timeout" in request ? request.timeout : undefined;
		const piMs = timeout && timeout > 0 ? timeout : undefined;
		const policyMs = this.#policyTimeoutMs > 0 ? this.#policyTimeoutMs : undefined;
		// Whichever clock runs out first settles it: pi's own timeout, or the gateway's policy.
		const piFirst = piMs !== undefined && (policyMs === undefined || piMs <= policyMs);
		const afterMs = piFirst ? Math.max(0, piMs - Math.min(expiryMarginMs, piMs / 10)) : policyMs;
		const approval: Approval = {
			id: request.id,
			sessionId: this.#sessionId,
			method: request.method,
			title: request.title ?? "",
			...(request.method === "confirm" && { message: request.message ?? "" }),
			...(request.method === "select" && { options: request.options ?? [] }),
			...(request.method === "input" && request.placeholder !== undefined && { placeholder: request.placeholder }),
			...(request.method === "editor" && request.prefill !== undefined && { prefill: request.prefill }),
			createdAt: new Date(now).toISOString(),
			expiresAt: afterMs === undefined ? null : new Date(now + afterMs).toISOString(),
			status: "pending",
			answer: null,
			resolvedAt: null,
			resolvedBy: null,
		};
		seqs.set(approval, ++lastSeq);
		this.#items.set(approval.id, approval);
		this.#pending++;
		this.#prune();
		// One session's agent must not grow the gateway's memory (and everyone's inbox) without bound: past
		// the bound the dialog is cancelled at once (the extension gets its default; the gate's blocks).
		if (this.#pending > this.#maxPending) {
			approval.expiresAt = null;
			approval.note = `Refused: this session already has ${this.#maxPending} dialogs pending (--max-pending-dialogs)`;
			return this.#settle(approval, "cancelled", null, resolvers.limit);
		}
		if (afterMs !== undefined) {
			const timer = setTimeout(() => {
				if (piFirst) this.#settle(approval, "expired", null, resolvers.piTimeout);
				else this.#settle(approval, "cancelled", null, resolvers.policy);
			}, afterMs);
			timer.unref();
			this.#timers.set(approval.id, timer);
		}
		this.#events.requested(approval);
		return approval;
	}

	/** Dialogs that were pending on a node that died: they answer 410 (the pi that asked is gone). */
	markLost(ids: Iterable<string>): void {
		for (const id of ids) this.#lost.add(id);
	}

	get(id: string): Approval {
		const approval = this.#items.get(id);
		if (!approval && this.#lost.has(id))
			throw new GatewayError(
				410,
				"approval_gone",
				`Approval ${id} was pending on a gateway node that stopped; the pi process that asked is gone (the session resumes on this node without it)`,
			);
		if (!approval) throw new GatewayError(404, "approval_not_found", `No approval ${id} in session ${this.#sessionId}`);
		return approval;
	}

	/** Oldest first. */
	list(status?: Approval["status"]): Approval[] {
		const all = [...this.#items.values()];
		return status ? all.filter((a) => a.status === status) : all;
	}

	/** A client's answer: 409 if another client answered first, 410 if nobody can answer it any more. */
	/** `principal`: who is authenticated; it becomes `resolvedBy`, and the answer's `by` its `note`. */
	answer(id: string, answer: ApprovalAnswer, principal?: string): Approval {
		const approval = this.get(id);
		if (approval.status !== "pending") {
			if (approval.answer !== null) {
				throw new GatewayError(
					409,
					"approval_already_answered",
					`This approval was already answered by ${approval.resolvedBy}`,
				);
			}
			throw new GatewayError(
				410,
				"approval_gone",
				`This approval is ${approval.status} (${approval.resolvedBy}); pi no longer waits for it`,
			);
		}
		const who = principal ?? answer.by ?? "api";
		if (principal !== undefined && answer.by !== undefined) approval.note = answer.by;
		if ("cancelled" in answer) return this.#settle(approval, "cancelled", { cancelled: true }, who);
		if ("confirmed" in answer) {
			if (approval.method !== "confirm") throw mismatch(approval, "`confirmed` answers only a confirm dialog");
			return this.#settle(approval, "answered", { confirmed: answer.confirmed }, who);
		}
		if (approval.method === "confirm") throw mismatch(approval, "it takes `confirmed: true|false`");
		if (approval.method === "select" && !approval.options?.includes(answer.value)) {
			throw mismatch(approval, `value must be one of ${JSON.stringify(approval.options ?? [])}`);
		}
		return this.#settle(approval, "answered", { value: answer.value }, who);
	}

	/** Dismisses every pending dialog and tells pi, so the extensions waiting on them go on. */
	cancelAll(by: string): void {
		for (const approval of this.#items.values()) {
			if (approval.status === "pending") this.#settle(approval, "cancelled", null, by);
		}
	}

	/** pi is gone: nothing to tell it, but every pending dialog is over. */
	abandonAll(): void {
		for (const approval of this.#items.values()) {
			if (approval.status === "pending") this.#settle(approval, "cancelled", null, resolvers.exit, false);
		}
	}

	#settle(
		approval: Approval,
		status: Exclude<Approval["status"], "pending">,
		answer: Approval["answer"],
		by: string,
		tellPi = true,
	): Approval {
		clearTimeout(this.#timers.get(approval.id));
		this.#timers.delete(approval.id);
		approval.status = status;
		approval.answer = answer;
		approval.resolvedAt = new Date().toISOString();
		approval.resolvedBy = by;
		this.#pending--;
		// Unanswered ones are dismissed: pi then resolves the dialog to its default, as on its own timeout.
		const response = tellPi
			? { type: "extension_ui_response", id: approval.id, ...(answer ?? { cancelled: true }) }
			: undefined;
		this.#events.resolved(approval, response);
		return approval;
	}

	#prune(): void {
		let excess = this.#items.size - this.#pending - keepSettled;
		for (const [id, approval] of this.#items) {
			if (excess <= 0) return;
			if (approval.status === "pending") continue;
			this.#items.delete(id);
			excess--;
		}
	}
}

function mismatch(approval: Approval, detail: string): GatewayError {
	return new GatewayError(422, "approval_answer_mismatch", `This is a ${approval.method} dialog: ${detail}`);
}

/** One page of approvals in creation order: those after `cursor`, at most `limit`. */
export function pageOf(
	approvals: Approval[],
	cursor: number,
	limit: number,
	/** The order and the cursor's unit: this gateway's creation order, or another (cluster mode). */
	seq: (approval: Approval) => number = approvalSeq,
): { approvals: Approval[]; nextCursor: string; hasMore: boolean } {
	const after = approvals.filter((a) => seq(a) > cursor).sort((a, b) => seq(a) - seq(b));
	const page = after.slice(0, limit);
	const last = page.at(-1);
	return {
		approvals: page,
		nextCursor: String(last ? seq(last) : cursor),
		hasMore: after.length > limit,
	};
}
