import { z } from "@hono/zod-openapi";
import { ApiError } from "../http/problem.ts";
import { type DialogMethod, dialogMethods, type UiRequest } from "../pi/protocol.ts";

export const ApprovalStatus = z.enum(["pending", "answered", "expired", "cancelled"]).openapi("ApprovalStatus");

export const ApprovalAnswer = z
	.union([
		z.strictObject({ confirmed: z.boolean(), by: z.string().max(200).optional() }),
		z.strictObject({ value: z.string(), by: z.string().max(200).optional() }),
		z.strictObject({ cancelled: z.literal(true), by: z.string().max(200).optional() }),
	])
	.openapi("ApprovalAnswer", {
		description:
			"`confirmed` answers a confirm dialog, `value` a select (one of the options) or an input/editor (any text), `cancelled` dismisses any dialog. `by` records who answered.",
		example: { confirmed: true, by: "alice" },
	});
export type ApprovalAnswer = z.infer<typeof ApprovalAnswer>;

export const Approval = z
	.object({
		id: z.string().openapi({ description: "pi's dialog id" }),
		sessionId: z.string(),
		method: z.enum(dialogMethods),
		title: z.string(),
		message: z.string().optional(),
		options: z.array(z.string()).optional(),
		placeholder: z.string().optional(),
		prefill: z.string().optional(),
		createdAt: z.string().openapi({ format: "date-time" }),
		expiresAt: z.string().nullable().openapi({ format: "date-time", description: "When pi's own timeout resolves it" }),
		status: ApprovalStatus,
		answer: z
			.object({ confirmed: z.boolean().optional(), value: z.string().optional(), cancelled: z.boolean().optional() })
			.nullable(),
		resolvedAt: z.string().nullable().openapi({ format: "date-time" }),
		resolvedBy: z.string().nullable().openapi({
			description:
				"Who settled it: the `by` of the answer, `pi-timeout`, or `gateway` (pi exited, run aborted, policy)",
		}),
	})
	.openapi("Approval");
export type Approval = z.infer<typeof Approval>;

export interface ApprovalEvents {
	requested(approval: Approval): void;
	/** `response` is what pi must be told; absent when pi already resolved it itself. */
	resolved(approval: Approval, response: Record<string, unknown> | undefined): void;
}

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
	#pending = 0;

	constructor(sessionId: string, events: ApprovalEvents, policyTimeoutMs = 0) {
		this.#sessionId = sessionId;
		this.#events = events;
		this.#policyTimeoutMs = policyTimeoutMs;
	}

	get pendingCount(): number {
		return this.#pending;
	}

	static isDialog(method: string): method is DialogMethod {
		return (dialogMethods as readonly string[]).includes(method);
	}

	open(request: UiRequest): Approval {
		const now = Date.now();
		const approval: Approval = {
			id: request.id,
			sessionId: this.#sessionId,
			method: request.method as DialogMethod,
			title: request.title ?? "",
			message: request.message,
			options: request.options,
			placeholder: request.placeholder,
			prefill: request.prefill,
			createdAt: new Date(now).toISOString(),
			expiresAt: request.timeout ? new Date(now + request.timeout).toISOString() : null,
			status: "pending",
			answer: null,
			resolvedAt: null,
			resolvedBy: null,
		};
		this.#items.set(approval.id, approval);
		this.#pending++;
		// pi resolves a timed dialog itself and says nothing, so the gateway keeps the same clock.
		if (request.timeout)
			this.#arm(approval.id, request.timeout, () => this.#settle(approval, "expired", null, "pi-timeout"));
		else if (this.#policyTimeoutMs > 0)
			this.#arm(approval.id, this.#policyTimeoutMs, () => this.cancel(approval.id, "gateway"));
		this.#events.requested(approval);
		return approval;
	}

	get(id: string): Approval {
		const approval = this.#items.get(id);
		if (!approval) throw new ApiError(404, "approval_not_found", `No approval ${id} in session ${this.#sessionId}`);
		return approval;
	}

	list(status?: Approval["status"]): Approval[] {
		const all = [...this.#items.values()];
		return status ? all.filter((a) => a.status === status) : all;
	}

	answer(id: string, answer: ApprovalAnswer): Approval {
		const approval = this.get(id);
		if (approval.status === "answered")
			throw new ApiError(409, "approval_already_answered", "This approval was already answered");
		if (approval.status !== "pending") {
			throw new ApiError(410, "approval_gone", `This approval is ${approval.status}; pi no longer waits for it`);
		}
		const by = answer.by ?? "api";
		if ("cancelled" in answer) return this.#settle(approval, "cancelled", { cancelled: true }, by);
		if ("confirmed" in answer) {
			if (approval.method !== "confirm") throw mismatch(approval, "`confirmed` answers only a confirm dialog");
			return this.#settle(approval, "answered", { confirmed: answer.confirmed }, by);
		}
		if (approval.method === "confirm") throw mismatch(approval, "a confirm dialog takes `confirmed: true|false`");
		if (approval.method === "select" && !approval.options?.includes(answer.value)) {
			throw mismatch(approval, `value must be one of: ${JSON.stringify(approval.options ?? [])}`);
		}
		return this.#settle(approval, "answered", { value: answer.value }, by);
	}

	/** Gateway-side dismissal (run aborted, policy timeout); pi is told so the extension unblocks. */
	cancel(id: string, by: string): void {
		const approval = this.#items.get(id);
		if (approval?.status === "pending") this.#settle(approval, "cancelled", { cancelled: true }, by);
	}

	cancelAll(by: string): void {
		for (const approval of this.#items.values()) this.cancel(approval.id, by);
	}

	/** pi is gone: nothing to tell it, but every pending dialog is over. */
	abandonAll(): void {
		for (const approval of this.#items.values()) {
			if (approval.status === "pending") this.#settle(approval, "cancelled", null, "gateway", false);
		}
	}

	#arm(id: string, ms: number, fire: () => void): void {
		const timer = setTimeout(fire, ms);
		timer.unref();
		this.#timers.set(id, timer);
	}

	#settle(
		approval: Approval,
		status: Approval["status"],
		answer: Approval["answer"],
		by: string,
		tellPi = status !== "expired",
	): Approval {
		clearTimeout(this.#timers.get(approval.id));
		this.#timers.delete(approval.id);
		approval.status = status;
		approval.answer = answer;
		approval.resolvedAt = new Date().toISOString();
		approval.resolvedBy = by;
		this.#pending--;
		const response = tellPi && answer ? { type: "extension_ui_response", id: approval.id, ...answer } : undefined;
		this.#events.resolved(approval, response);
		return approval;
	}
}

function mismatch(approval: Approval, detail: string): ApiError {
	return new ApiError(422, "approval_answer_mismatch", `This is a ${approval.method} dialog: ${detail}`);
}
