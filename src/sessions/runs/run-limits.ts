import { z } from "@hono/zod-openapi";
import type { LoggedEvent } from "../events/event-log.ts";
import type { Session } from "../session/session.ts";
import { RunWatch } from "./run-result.ts";

/**
 * Per-run limits (issue 31 item 3): turns, tokens, cost and time a run command may spend. Past one
 * the gateway logs `run_limit_reached` and aborts the run, so its result carries `limit`. Tokens
 * and cost are the session budget's (budget.ts: the relay's figures for a relayed call, pi's report
 * of the rest, usageOf), taken while the run lasts and checked at each of pi's events; a turn counts
 * as it starts, time from pi's answer to the command.
 */
export const RunLimits = z
	.strictObject({
		maxTurns: z.number().int().min(1).max(10_000).optional().openapi({
			description:
				"Assistant turns the run may start (a turn is one model call and its tool calls; structured output's repair turns count). The turn after the last allowed one is aborted as it starts: `used` is then `maxTurns + 1`",
			example: 10,
		}),
		maxTokens: z.number().int().min(1).optional().openapi({
			description:
				"Tokens (pi's `usage.totalTokens` of each model call of the run: its assistant messages and a compaction pi runs in it; input, output and cache) the run may use. Checked as each call's usage is reported, so `used` can pass it by one call's worth",
			example: 200000,
		}),
		maxCostUsd: z.number().positive().optional().openapi({
			description:
				"Cost in USD (pi's `usage.cost.total` of each model call of the run), checked as each call's usage is reported",
			example: 0.5,
		}),
		maxDurationMs: z.number().int().min(1).max(86_400_000).optional().openapi({
			description: "Milliseconds from pi's acceptance of the command to the run's end",
			example: 300000,
		}),
	})
	.openapi("RunLimits", {
		description:
			"Limits of one run command (each optional). Past one the run is aborted; its result carries `limit` and the stream `run_limit_reached`. On a steer or follow-up they apply to the run it joins, from then on",
		example: { maxTurns: 10, maxDurationMs: 300000 },
	});
export type RunLimits = z.infer<typeof RunLimits>;

export const LimitKind = z
	.enum(["turns", "tokens", "cost", "duration"])
	.openapi("LimitKind", { description: "Which limit a run met", example: "turns" });
export type LimitKind = z.infer<typeof LimitKind>;

export const LimitHit = z
	.object({
		kind: LimitKind,
		allowed: z.number().openapi({ description: "The limit as set (turns, tokens, USD or milliseconds)", example: 3 }),
		used: z.number().openapi({ description: "What the run had used when the gateway stopped it", example: 4 }),
	})
	.openapi("LimitHit", {
		description: "The limit that stopped a run: its kind, what was allowed and what was used",
		example: { kind: "turns", allowed: 3, used: 4 },
	});
export type LimitHit = z.infer<typeof LimitHit>;

/**
 * Watches the run that command `runId` starts or joins and aborts it past a limit. Subscribed
 * before the command is sent; it ends with the run (or with the command, when no run follows).
 */
export class LimitWatch {
	readonly #session: Session;
	readonly #runId: string;
	readonly #limits: RunLimits;
	readonly #watch: RunWatch;
	readonly #unsubscribe: () => void;
	readonly #unhook: () => void;
	/** The run_limit_reached event not yet logged (it is, at the next microtask or before the settle). */
	#pending: string | undefined;
	#timer: NodeJS.Timeout | undefined;
	#turns = 0;
	#tokens = 0;
	#costUsd = 0;
	/** The session budget's figures when the run's usage was last taken from it. */
	#budgetTokens = 0;
	#budgetCostUsd = 0;
	#hit = false;
	#startedAt = 0;

	constructor(session: Session, runId: string, limits: RunLimits) {
		this.#session = session;
		this.#runId = runId;
		this.#limits = limits;
		this.#watch = new RunWatch(session, runId);
		this.#unsubscribe = session.events.subscribe((event) => this.#feed(event));
		this.#unhook = session.beforeSettle(() => {
			this.#flush();
			return false;
		});
	}

	#feed(event: LoggedEvent): void {
		const wasResponded = this.#watch.responded;
		if (this.#watch.feed(event)) {
			this.dispose();
			return;
		}
		if (!this.#watch.responded) return;
		if (!wasResponded) this.#accepted();
		const { maxTurns, maxTokens, maxCostUsd } = this.#limits;
		if (event.type === "turn_start") {
			this.#turns++;
			if (maxTurns !== undefined && this.#turns > maxTurns) this.#stop("turns", maxTurns, this.#turns);
		} else {
			// Every model call the run makes (its turns, a compaction pi runs inside it, a call a tool or
			// an extension makes through the relay), as the session's budget counts it: one source per
			// call (the relay's figures for a relayed call, pi's report for the rest). The budget heard
			// this event first (it subscribed with the session); what the relay counted since the last
			// event shows at this one.
			const { budget } = this.#session;
			const tokens = budget.usedTokens - this.#budgetTokens;
			const costUsd = budget.usedCostUsd - this.#budgetCostUsd;
			if (tokens <= 0 && costUsd <= 0) return;
			this.#budgetTokens = budget.usedTokens;
			this.#budgetCostUsd = budget.usedCostUsd;
			this.#tokens += tokens;
			this.#costUsd += costUsd;
			if (maxTokens !== undefined && this.#tokens > maxTokens) this.#stop("tokens", maxTokens, this.#tokens);
			else if (maxCostUsd !== undefined && this.#costUsd > maxCostUsd)
				this.#stop("cost", maxCostUsd, Number(this.#costUsd.toFixed(9)));
		}
	}

	/** pi took the command: the run's clock starts, and its usage counts from the budget's figures now. */
	#accepted(): void {
		this.#budgetTokens = this.#session.budget.usedTokens;
		this.#budgetCostUsd = this.#session.budget.usedCostUsd;
		const ms = this.#limits.maxDurationMs;
		this.#startedAt = Date.now();
		if (ms === undefined) return;
		// The timer runs on the monotonic clock and Date.now() on the wall clock: it can read 1 ms short
		// of the limit the timer already saw pass (used 499 of 500 was seen).
		this.#timer = setTimeout(() => this.#stop("duration", ms, Math.max(ms, Date.now() - this.#startedAt)), ms);
		this.#timer.unref();
	}

	#stop(kind: LimitKind, allowed: number, used: number): void {
		if (this.#hit) return;
		this.#hit = true;
		clearTimeout(this.#timer);
		const limit: LimitHit = { kind, allowed, used };
		const session = this.#session;
		this.#pending = JSON.stringify({ type: "run_limit_reached", sessionId: session.id, runId: this.#runId, limit });
		// Not from inside a log listener (the listeners after this one would see it before the event
		// being delivered): at the next microtask, or before pi's settle if that comes first.
		queueMicrotask(() => this.#flush());
	}

	#flush(): void {
		const pending = this.#pending;
		if (pending === undefined) return;
		this.#pending = undefined;
		this.#session.events.append("run_limit_reached", pending);
		// The run ends as any aborted run does: pi settles it with aborted:true.
		this.#session.request({ type: "abort" }).catch(() => {});
	}

	dispose(): void {
		clearTimeout(this.#timer);
		this.#unsubscribe();
		this.#unhook();
	}
}
