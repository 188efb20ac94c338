import { Counter, type Registry } from "prom-client";
import type { LoggedEvent } from "../../sessions/events/index.ts";
import { reportedUsage } from "../../sessions/runs/index.ts";

/**
 * Most principals a `principal` label takes; the rest are counted as `_other`. Principals are
 * known names (the keys file's, `admin`), but JWT subjects (`jwt:<sub>`) are an identity
 * provider's to mint: the cap keeps the series bounded whatever it mints.
 */
export const maxPrincipalLabels = 500;
export const otherPrincipals = "_other";

const kinds = ["input", "output", "cacheRead", "cacheWrite"] as const;

type Usage = Partial<Record<(typeof kinds)[number], unknown>> & { cost?: { total?: unknown } };

/**
 * `pi_gateway_tokens_total{principal,kind}` and `pi_gateway_cost_total{principal}`, from the
 * `usage` of every model call pi reports (run-limits.ts reportedUsage: assistant and tool-result
 * messages, compactions, cache warming; what the budget counts). Returns the event handler: called
 * for message_end, compaction_end and entry_appended, it parses only those.
 */
export function usageCounters(registers: Registry[], ownerOf: (sessionId: string) => string) {
	const tokens = new Counter({
		name: "pi_gateway_tokens_total",
		help: `Tokens pi's model reported, by the session owner's principal (at most ${maxPrincipalLabels}, then "${otherPrincipals}") and kind (input, output, cacheRead, cacheWrite); the gateway-wide total is the sum`,
		labelNames: ["principal", "kind"],
		registers,
	});
	const cost = new Counter({
		name: "pi_gateway_cost_total",
		help: "Cost pi's model reported (usage.cost.total, in the model's currency, normally USD), by the session owner's principal",
		labelNames: ["principal"],
		registers,
	});
	const seen = new Set<string>();
	const labelOf = (principal: string) => {
		if (seen.has(principal)) return principal;
		if (seen.size >= maxPrincipalLabels) return otherPrincipals;
		seen.add(principal);
		for (const kind of kinds) tokens.inc({ principal, kind }, 0);
		cost.inc({ principal }, 0);
		return principal;
	};
	return (sessionId: string, event: LoggedEvent) => {
		const usage = usageReported(event);
		if (!usage || typeof usage !== "object") return;
		const principal = labelOf(ownerOf(sessionId));
		for (const kind of kinds) {
			const n = usage[kind];
			if (typeof n === "number" && Number.isFinite(n) && n > 0) tokens.inc({ principal, kind }, n);
		}
		const total = usage.cost?.total;
		if (typeof total === "number" && Number.isFinite(total) && total > 0) cost.inc({ principal }, total);
	};
}

function usageReported(event: LoggedEvent): Usage | undefined {
	try {
		return reportedUsage(event) as Usage | undefined;
	} catch {
		return undefined;
	}
}
