import type { ModelCost, RelayRoute } from "./credentials.ts";
import { type CallUsage, meteredUsage, totalTokens, UsageTap } from "./usage.ts";

/** Where a session's relay counts its calls, and asks whether to refuse the next. */
export interface RelaySink {
	/**
	 * Why a call is refused now (the budget is spent, or cannot hold for it), or undefined.
	 * `priced`: the call's route has prices (without any, a cost budget cannot hold: docs/limits.md).
	 */
	refusal(call: { priced: boolean }): { code: string; message: string } | undefined;
	/** One call's usage (the provider's figures, else an estimate) and its cost at the model's prices. */
	counted(tokens: number, costUsd: number): void;
}

const highest = new WeakMap<RelayRoute, ModelCost | undefined>();

/** pi-ai's prices by the call's input size (Gemini 2.5 Pro's above 200,000 tokens), where a model has them. */
type Tiered = ModelCost & { tiers?: (ModelCost & { inputTokensAbove: number })[] };
const tiersOf = (cost: ModelCost) => {
	const tiers = (cost as Tiered).tiers;
	return Array.isArray(tiers) ? tiers.filter((t) => typeof t?.inputTokensAbove === "number") : [];
};

/** The highest price the route knows, field by field; undefined when it knows none. */
function highestPrice(route: RelayRoute): ModelCost | undefined {
	if (highest.has(route)) return highest.get(route);
	let top: ModelCost | undefined;
	for (const cost of [...route.costs.values()].flatMap((c) => [c, ...tiersOf(c)]))
		top = {
			input: Math.max(top?.input ?? 0, cost.input),
			output: Math.max(top?.output ?? 0, cost.output),
			cacheRead: Math.max(top?.cacheRead ?? 0, cost.cacheRead),
			cacheWrite: Math.max(top?.cacheWrite ?? 0, cost.cacheWrite),
		};
	highest.set(route, top);
	return top;
}

/** The prices of `model` on the route: its own entry, else its undated one (`o3-pro-2025-06-10` → `o3-pro`). */
export function priceOf(route: RelayRoute, model: string | undefined): ModelCost | undefined {
	if (!model) return undefined;
	const own = route.costs.get(model);
	if (own) return own;
	// A dated snapshot the answer names: -YYYY-MM-DD (OpenAI), -YYYYMMDD (Anthropic).
	const undated = model.replace(/-(?:\d{4}-\d{2}-\d{2}|\d{8})$/, "");
	return undated === model ? undefined : route.costs.get(undated);
}

/**
 * A call's cost in USD: at the prices of the model the answer names, else the one the request's
 * top level asks for (request-body.ts), else (a model unknown, or one the route has no price for)
 * the highest price the route knows, so no call is cheap by a name it chose. 0 only on a route
 * without any price.
 */
export function costOf(route: RelayRoute, usage: CallUsage, requested: string | undefined): number {
	const base = priceOf(route, usage.model) ?? priceOf(route, requested) ?? highestPrice(route);
	if (!base) return 0;
	// The tier of the largest threshold the call's input passes, as pi-ai prices it.
	const input = usage.input + usage.cacheRead + usage.cacheWrite;
	let cost = base;
	let threshold = -1;
	for (const tier of tiersOf(base))
		if (input > tier.inputTokensAbove && tier.inputTokensAbove > threshold) {
			cost = tier;
			threshold = tier.inputTokensAbove;
		}
	const usd =
		(usage.input * cost.input +
			usage.output * cost.output +
			usage.cacheRead * cost.cacheRead +
			usage.cacheWrite * cost.cacheWrite) /
		1_000_000;
	return Number.isFinite(usd) && usd > 0 ? usd : 0;
}

/**
 * One call's accounting, from the moment the relay sends it: the request's bytes (and the model it
 * asks for), the answer's status, bytes and figures. `settle` counts the call once, whichever comes
 * first (the answer's end, an error, a cut) and frees its slot (`done`).
 */
export class CallMeter {
	#requestBytes = 0;
	/** The model the request's top level asks for (the answer's own name may carry a date the price list lacks). */
	#requested: string | undefined;
	/** The provider was handed the whole request. */
	#sent = false;
	#status = 0;
	#tap: UsageTap | undefined;
	#answerBytes = 0;
	#settled = false;

	readonly route: RelayRoute;
	readonly sink: RelaySink;
	/** Frees the call's slot. */
	readonly done: () => void;

	constructor(route: RelayRoute, sink: RelaySink, done: () => void) {
		this.route = route;
		this.sink = sink;
		this.done = done;
	}

	/** The request as sent: its size, and the model it asks for. */
	request(bytes: number, model: string | undefined): void {
		this.#requestBytes = bytes;
		this.#requested = model;
	}

	sent(): void {
		this.#sent = true;
	}

	answer(status: number, contentType: string | undefined): void {
		this.#status = status;
		this.#tap = new UsageTap(contentType);
	}

	data(chunk: Buffer): void {
		this.#answerBytes += chunk.length;
		this.#tap?.push(chunk);
	}

	get wholeRequest(): boolean {
		return this.#sent;
	}

	get settled(): boolean {
		return this.#settled;
	}

	/** Counts the call (once): `ended` when its answer came whole. */
	settle(ended: boolean): void {
		if (this.#settled) return;
		this.#settled = true;
		try {
			const usage = this.usage(ended);
			const tokens = totalTokens(usage);
			if (tokens > 0) this.sink.counted(tokens, costOf(this.route, usage, this.#requested));
		} finally {
			this.done();
		}
	}

	/**
	 * What the call counts. An answer with an error status counts its figures if any, else nothing
	 * (providers bill no refused call, and pi retries a 429). A call the provider was handed whole
	 * but never answered (cut, timed out) counts its input's estimate; one it never got whole, nothing.
	 */
	usage(ended: boolean): CallUsage {
		const zero = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
		const bytes = { request: this.#requestBytes, answer: this.#answerBytes, ended };
		if (!this.#tap) return this.#sent ? meteredUsage(zero, false, bytes) : zero;
		const figures = this.#tap.end();
		if (this.#status >= 300) return figures;
		return meteredUsage(figures, this.#tap.figured, bytes);
	}
}
