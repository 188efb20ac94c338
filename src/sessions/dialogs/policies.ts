import { z } from "@hono/zod-openapi";
import { dialogMethods } from "../../pi/protocol.ts";
import type { Approval, ApprovalAnswer } from "./approvals.ts";
import {
	fullMatch,
	matchedChars,
	maxPatternChars,
	maxProgramSize,
	maxSetProgramSize,
	patternProblem,
	programSize,
} from "./policy-pattern.ts";

/**
 * A user-supplied pattern: RE2 syntax, run by the linear-time engine in policy-pattern.ts (never a
 * JavaScript RegExp), matched against the whole text. What RE2 cannot run in linear time
 * (backreferences, lookarounds) it refuses as a syntax error; the size bounds keep the cost of one
 * match (program size × text length) small.
 */
export const SafePattern = z
	.string()
	.min(1)
	.max(maxPatternChars)
	.superRefine((p, ctx) => {
		const problem = patternProblem(p);
		if (problem) ctx.addIssue({ code: "custom", message: problem });
	})
	.openapi({
		description: `An RE2 regular expression (https://github.com/google/re2/wiki/Syntax), at most ${maxPatternChars} characters and ${maxProgramSize} RE2 instructions (${maxSetProgramSize} for all the patterns of one policy set), matched against the whole text (an anchored full match; \`.\` does not match a newline unless the pattern starts with \`(?s)\`). No backreferences or lookarounds: RE2 has none. A text longer than ${matchedChars} characters is never matched by a pattern: the dialog is left to a person.`,
	});

const PolicyAction = z
	.union([
		z.enum(["allow", "deny", "cancel", "ask"]),
		z.strictObject({
			value: z.string().max(10_000).describe("The answer to give: a select's option, or an input's text"),
		}),
	])
	.openapi({
		description:
			"`allow`/`deny`: confirm → true/false; select → the option that reads like allow (Allow, Yes, Approve, OK) or deny (Block, Deny, No, Reject); `deny` without such an option, and on input/editor, cancels. `{value}` answers a select (one of its options) or an input/editor. `cancel` dismisses the dialog. `ask` leaves it to a person and stops looking at further rules. A rule whose action does not fit the dialog is skipped.",
	});

export const PolicyRule = z
	.strictObject({
		name: z
			.string()
			.regex(/^[\w.:-]{1,64}$/)
			.describe("The rule's name, recorded as `resolvedBy: policy:<name>` on what it answers"),
		match: z
			.strictObject({
				method: z
					.array(z.enum(dialogMethods))
					.min(1)
					.optional()
					.describe("Only dialogs of these kinds (any kind when left out)"),
				title: SafePattern.optional(),
				titleEquals: z.string().max(10_000).optional().describe("Only dialogs whose title is exactly this"),
				message: SafePattern.optional(),
				sessions: z
					.array(z.string())
					.max(100)
					.optional()
					.openapi({ description: "Gateway rules: only these sessions" }),
			})
			.default({})
			.describe(
				"What a dialog must be for the rule to apply; every condition given must hold (an empty match takes every dialog)",
			),
		action: PolicyAction,
	})
	.openapi("ApprovalPolicyRule", {
		description: "One approval policy rule: which dialogs it takes, and how it answers them",
		example: {
			name: "allow-ls",
			match: { method: ["select"], title: "(?s)Allow this bash command\\?\\s+ls( .*)?" },
			action: "allow",
		},
	});
export type PolicyRule = z.infer<typeof PolicyRule>;

export const PolicySet = z
	.strictObject({
		rules: z.array(PolicyRule).max(100).default([]).describe("The rules, tried in order"),
		unanswered: z
			.strictObject({
				afterMs: z.number().int().min(1).describe("Milliseconds a dialog may wait unanswered"),
				action: z.enum(["cancel", "deny", "wait"]).describe("What then happens to it"),
			})
			.optional()
			.openapi({ description: "What happens to a dialog nobody answered in afterMs: cancel, deny, or wait on" }),
	})
	.superRefine((set, ctx) => {
		// One dialog is matched against every pattern of a set: the sum bounds the work it costs.
		const total = set.rules.reduce(
			(sum, r) =>
				sum + (r.match.title ? programSize(r.match.title) : 0) + (r.match.message ? programSize(r.match.message) : 0),
			0,
		);
		if (total > maxSetProgramSize)
			ctx.addIssue({
				code: "custom",
				path: ["rules"],
				message: `the RE2 patterns of these rules add up to ${total} instructions, over the ${maxSetProgramSize} allowed`,
			});
	})
	.openapi("ApprovalPolicies", {
		description: `Ordered rules; the first that matches a dialog and fits it answers it at once, with \`resolvedBy: policy:<name>\`. The gateway's rules (--approval-policies-file) come first, then the session's remembered answers, then the session's own rules. The RE2 patterns of one set add up to at most ${maxSetProgramSize} instructions. A session's rules that approve (\`allow\`, \`{value}\`) need the creator to hold approvals:answer (else 403).`,
	});
export type PolicySet = z.infer<typeof PolicySet>;

const allowLike = /^(allow|yes|approve|ok|accept)\b/i;
const denyLike = /^(block|deny|no|reject|refuse)\b/i;

/**
 * Whether the rule matches; undefined when one of its patterns would have to read a text longer than
 * a pattern reads. Then no rule may decide (not this one, and not a later, broader one the agent
 * reached by making its command long): the dialog is left to a person.
 */
function matches(rule: PolicyRule, approval: Approval): boolean | undefined {
	const m = rule.match;
	if (m.method && !m.method.includes(approval.method)) return false;
	if (m.sessions && !m.sessions.includes(approval.sessionId)) return false;
	if (m.titleEquals !== undefined && m.titleEquals !== approval.title) return false;
	const title = m.title === undefined ? true : fullMatch(m.title, approval.title);
	const message = m.message === undefined ? true : fullMatch(m.message, approval.message ?? "");
	if (title === false || message === false) return false;
	if (title === undefined || message === undefined) return undefined;
	return true;
}

/** The rules of a set that approve a dialog by themselves: creating them takes approvals:answer. */
export function approvingRules(set: PolicySet | undefined): string[] {
	return (set?.rules ?? []).filter((r) => r.action === "allow" || typeof r.action === "object").map((r) => r.name);
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
		const matched = matches(rule, approval);
		if (matched === undefined) return undefined;
		if (!matched) continue;
		const answer = answerFor(rule.action, approval);
		if (answer === "ask") return undefined;
		if (answer) return { rule, answer };
	}
	return undefined;
}
