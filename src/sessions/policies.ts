import { z } from "@hono/zod-openapi";
import { dialogMethods } from "../pi/protocol.ts";
import type { Approval, ApprovalAnswer } from "./approvals.ts";

/** Only this much of a title or message is matched: a pattern never scans an unbounded string. */
const matchedChars = 4096;

/**
 * A pattern that cannot backtrack catastrophically: at most 200 characters, no backreferences, no
 * lookarounds, and no quantified group (every classic ReDoS needs a quantifier on a group that
 * itself repeats or alternates), matched against at most 4096 characters.
 */
export const SafePattern = z
	.string()
	.min(1)
	.max(200)
	.refine((p) => !/\\[1-9k]/.test(p), "no backreferences")
	.refine((p) => !/\(\?<?[=!]/.test(p), "no lookarounds")
	.refine((p) => !/(^|[^\\])(\\\\)*\)[*+?{]/.test(p), "no quantifier after a group")
	.refine((p) => {
		try {
			new RegExp(p, "u");
			return true;
		} catch {
			return false;
		}
	}, "a valid regular expression")
	.openapi({ description: "A bounded regular expression (no backreferences, lookarounds or quantified groups)" });

const PolicyAction = z
	.union([z.enum(["allow", "deny", "cancel", "ask"]), z.strictObject({ value: z.string().max(10_000) })])
	.openapi({
		description:
			"`allow`/`deny`: confirm → true/false; select → the option that reads like allow (Allow, Yes, Approve, OK) or deny (Block, Deny, No, Reject); `deny` without such an option, and on input/editor, cancels. `{value}` answers a select (one of its options) or an input/editor. `cancel` dismisses the dialog. `ask` leaves it to a person and stops looking at further rules. A rule whose action does not fit the dialog is skipped.",
	});

export const PolicyRule = z
	.strictObject({
		name: z.string().regex(/^[\w.:-]{1,64}$/),
		match: z
			.strictObject({
				method: z.array(z.enum(dialogMethods)).min(1).optional(),
				title: SafePattern.optional(),
				titleEquals: z.string().max(10_000).optional(),
				message: SafePattern.optional(),
				sessions: z
					.array(z.string())
					.max(100)
					.optional()
					.openapi({ description: "Gateway rules: only these sessions" }),
			})
			.default({}),
		action: PolicyAction,
	})
	.openapi("ApprovalPolicyRule");
export type PolicyRule = z.infer<typeof PolicyRule>;

export const PolicySet = z
	.strictObject({
		rules: z.array(PolicyRule).max(100).default([]),
		unanswered: z
			.strictObject({ afterMs: z.number().int().min(1), action: z.enum(["cancel", "deny", "wait"]) })
			.optional()
			.openapi({ description: "What happens to a dialog nobody answered in afterMs: cancel, deny, or wait on" }),
	})
	.openapi("ApprovalPolicies", {
		description:
			"Ordered rules; the first that matches a dialog and fits it answers it at once, with `resolvedBy: policy:<name>`. Session rules come before the gateway's.",
	});
export type PolicySet = z.infer<typeof PolicySet>;

const allowLike = /^(allow|yes|approve|ok|accept)\b/i;
const denyLike = /^(block|deny|no|reject|refuse)\b/i;

function matches(rule: PolicyRule, approval: Approval): boolean {
	const m = rule.match;
	if (m.method && !m.method.includes(approval.method)) return false;
	if (m.sessions && !m.sessions.includes(approval.sessionId)) return false;
	if (m.titleEquals !== undefined && m.titleEquals !== approval.title) return false;
	if (m.title && !new RegExp(m.title, "u").test(approval.title.slice(0, matchedChars))) return false;
	if (m.message && !new RegExp(m.message, "u").test((approval.message ?? "").slice(0, matchedChars))) return false;
	return true;
}

/** The answer an action gives this dialog; undefined when it does not fit (the rule is skipped). */
export function answerFor(action: PolicyRule["action"], approval: Approval): ApprovalAnswer | "ask" | undefined {
	if (action === "ask") return "ask";
	if (action === "cancel") return { cancelled: true };
	if (typeof action === "object") {
		if (approval.method === "confirm") return undefined;
		if (approval.method === "select" && !approval.options?.includes(action.value)) return undefined;
		return { value: action.value };
	}
	if (approval.method === "confirm") return { confirmed: action === "allow" };
	if (approval.method === "select") {
		const option = approval.options?.find((o) => (action === "allow" ? allowLike : denyLike).test(o));
		if (option !== undefined) return { value: option };
		return action === "deny" ? { cancelled: true } : undefined;
	}
	return action === "deny" ? { cancelled: true } : undefined;
}

/** The first rule that decides the dialog, in order; `ask` (or nothing) leaves it to a person. */
export function decide(
	rules: PolicyRule[],
	approval: Approval,
): { rule: PolicyRule; answer: ApprovalAnswer } | undefined {
	for (const rule of rules) {
		if (!matches(rule, approval)) continue;
		const answer = answerFor(rule.action, approval);
		if (answer === "ask") return undefined;
		if (answer) return { rule, answer };
	}
	return undefined;
}
