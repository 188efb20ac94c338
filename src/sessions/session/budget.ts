import { z } from "@hono/zod-openapi";
import { GatewayError } from "../../shared/errors.ts";
import { type EventLog, eventJson, type LoggedEvent } from "../events/event-log.ts";
import { usageOf } from "../events/usage.ts";

/**
 * A session's budget (issue 31 item 3): tokens and cost its model calls may use in all, counted from
 * the usage pi reports for each of them (run-limits.ts usageOf: every assistant message, whatever
 * started the run, and every compaction). Once the usage reaches a limit, the next command that
 * calls the model is refused before pi with 409 `budget_exhausted`; a run in progress is not cut
 * (per-run `limits` do that). The usage is kept with the session's record, so a gateway restart
 * does not reset it.
 */
export const SessionBudget = z
	.strictObject({
		maxTokens: z.number().int().min(1).optional().openapi({
			description:
				"Tokens (pi's `usage.totalTokens`, summed over every model call pi reports: assistant messages and compactions) the session may use",
			example: 1000000,
		}),
		maxCostUsd: z.number().positive().optional().openapi({
			description: "Cost in USD (pi's `usage.cost.total`, summed) the session may use",
			example: 5,
		}),
	})
	.openapi("SessionBudget", {
		description:
			"Limits on what all of a session's model calls may use together (each optional; an empty object: none). Past one, prompts, steers, follow-ups and compactions are refused with 409 `budget_exhausted` until it is raised (PUT …/budget). docs/limits.md",
		example: { maxTokens: 1000000, maxCostUsd: 5 },
	});
export type SessionBudget = z.infer<typeof SessionBudget>;

export const BudgetView = z
	.object({
		maxTokens: z.number().int().nullable().openapi({ description: "The token limit (null: none)", example: 1000000 }),
		maxCostUsd: z.number().nullable().openapi({ description: "The cost limit in USD (null: none)", example: 5 }),
		usedTokens: z.number().openapi({ description: "Tokens the session's model calls used so far", example: 48213 }),
		usedCostUsd: z
			.number()
			.openapi({ description: "Cost in USD the session's model calls used so far", example: 0.41 }),
		exhausted: z.enum(["tokens", "cost"]).nullable().openapi({
			description: "Which limit the usage has reached (commands that call the model are refused), or null",
			example: null,
		}),
	})
	.openapi("Budget", {
		description: "A session's budget: its limits and what its model calls used so far (kept across gateway restarts)",
		example: { maxTokens: 1000000, maxCostUsd: 5, usedTokens: 48213, usedCostUsd: 0.41, exhausted: null },
	});
export type BudgetView = z.infer<typeof BudgetView>;

/** What the session's record keeps. */
export interface StoredBudget {
	maxTokens?: number;
	maxCostUsd?: number;
	usedTokens: number;
	usedCostUsd: number;
}

export const StoredBudget = z.object({
	maxTokens: z.number().optional(),
	maxCostUsd: z.number().optional(),
	usedTokens: z.number(),
	usedCostUsd: z.number(),
});

/**
 * The commands of pi's RPC that call the model (pi 1.6): a run's, and compact (its summary). Refused
 * once the budget is spent, by whichever route they come (typed, streamed, /rpc, the gateway's own
 * repair prompts). A type this gateway does not know is not among them (docs/limits.md).
 */
export const modelCommands: ReadonlySet<string> = new Set(["prompt", "steer", "follow_up", "compact"]);

/**
 * One source per call, never two: a call that went through the relay (a sandboxed pi's, to a
 * provider the relay serves) is counted there, from the provider's own answer, whoever made it (pi,
 * a compaction, an extension, a retry); pi's report of it is then left out. pi's reports count for
 * the calls no relay sees: an in-process provider (the demo model) and an unsandboxed pi
 * (docs/limits.md).
 */
export class Budget {
	limits: SessionBudget = {};
	usedTokens = 0;
	usedCostUsd = 0;
	/** Providers the current pi's relay serves: pi's reports of their calls are not counted again. */
	relayed: ReadonlySet<string> = new Set();
	/** The provider of pi's last answer: a compaction's or cache warming's report names none. */
	#provider: string | undefined;

	constructor(events: EventLog) {
		events.subscribe((event) => {
			const provider = providerOf(event);
			if (provider) this.#provider = provider;
			if (this.relayed.has(provider ?? this.#provider ?? "")) return;
			const { tokens, costUsd } = usageOf(event);
			this.usedTokens += tokens;
			this.usedCostUsd += costUsd;
		});
	}

	/** A call the relay passed, as the provider reported it. */
	countRelayed(tokens: number, costUsd: number): void {
		this.usedTokens += tokens;
		this.usedCostUsd += costUsd;
	}

	/**
	 * Why the relay refuses a call now, or undefined: a limit reached (the same limits as
	 * assertAvailable), or a call on a route without any price (`priced` false) while the budget is a
	 * cost alone: every such call would cost $0 against it, so it could not hold (docs/limits.md).
	 */
	refusal(sessionId: string, { priced }: { priced: boolean }): { code: string; message: string } | undefined {
		const kind = this.exhausted();
		if (kind) {
			const view = this.view();
			const [used, allowed] =
				kind === "tokens" ? [view.usedTokens, view.maxTokens] : [view.usedCostUsd, view.maxCostUsd];
			const message = `Session ${sessionId} has used its ${kind} budget (${used} of ${allowed}): the gateway refused this model call; raise the budget with PUT /v1/sessions/${sessionId}/budget`;
			return { code: "budget_exhausted", message };
		}
		const { maxTokens, maxCostUsd } = this.limits;
		if (priced || maxCostUsd === undefined || maxTokens !== undefined) return undefined;
		const message = `Session ${sessionId} has a cost budget only, and this provider has no prices (no model of it has a \`cost\` in models.json), so its calls would cost nothing against it: the gateway refused this model call; give the provider's models a cost, or the session a maxTokens budget (PUT /v1/sessions/${sessionId}/budget)`;
		return { code: "budget_unpriced", message };
	}

	/** A record read back: its limits (set after create, they win over the create body's) and usage. */
	restore(stored: StoredBudget): void {
		const { usedTokens, usedCostUsd, ...limits } = stored;
		this.limits = limits;
		this.usedTokens = usedTokens;
		this.usedCostUsd = usedCostUsd;
	}

	stored(): StoredBudget {
		return { ...this.limits, usedTokens: this.usedTokens, usedCostUsd: Number(this.usedCostUsd.toFixed(9)) };
	}

	exhausted(): "tokens" | "cost" | null {
		const { maxTokens, maxCostUsd } = this.limits;
		if (maxTokens !== undefined && this.usedTokens >= maxTokens) return "tokens";
		if (maxCostUsd !== undefined && this.usedCostUsd >= maxCostUsd) return "cost";
		return null;
	}

	view(): BudgetView {
		return {
			maxTokens: this.limits.maxTokens ?? null,
			maxCostUsd: this.limits.maxCostUsd ?? null,
			usedTokens: this.usedTokens,
			usedCostUsd: Number(this.usedCostUsd.toFixed(9)),
			exhausted: this.exhausted(),
		};
	}

	/** 409 `budget_exhausted` (before pi) for a command that calls the model, once the usage reached a limit. */
	assertAvailable(sessionId: string, type: string): void {
		if (!modelCommands.has(type)) return;
		const kind = this.exhausted();
		if (!kind) return;
		const view = this.view();
		const allowed = kind === "tokens" ? view.maxTokens : view.maxCostUsd;
		const used = kind === "tokens" ? view.usedTokens : view.usedCostUsd;
		throw new GatewayError(
			409,
			"budget_exhausted",
			`Session ${sessionId} has used its ${kind} budget (${used} of ${allowed}); raise it with PUT /v1/sessions/${sessionId}/budget`,
			{ budget: view },
		);
	}
}

/** The provider an assistant message names (pi's message_end), else undefined. */
function providerOf(event: LoggedEvent): string | undefined {
	if (event.type !== "message_end") return undefined;
	try {
		const { message } = eventJson<{ message?: { role?: string; provider?: unknown } }>(event);
		return message?.role === "assistant" && typeof message.provider === "string" ? message.provider : undefined;
	} catch {
		return undefined;
	}
}
