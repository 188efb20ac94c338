import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { RE2JS } from "re2js";
import { describe, expect, it } from "vitest";
import type { Approval } from "../../src/sessions/dialogs/approvals.ts";
import { decide, PolicySet } from "../../src/sessions/dialogs/policies.ts";
import {
	compilePattern,
	fullMatch,
	matchedChars,
	maxPatternChars,
	maxProgramSize,
	patternProblem,
} from "../../src/sessions/dialogs/policy-pattern.ts";

// Issue 20, deliverable 3: the worst regular expressions the pattern rules let through, against
// 4,096-character texts. That they are harmless is shown by the engine, not by a stopwatch: each
// one compiles to an RE2 program (re2js: automata, no backtracking) of at most maxProgramSize
// instructions, so one match costs at most maxProgramSize × 4,096 steps; what RE2 cannot run in
// linear time is refused before it is stored.

const n = matchedChars;
/** The classic ReDoS shapes, each with texts built to make a backtracking engine try every split. */
const worst: { pattern: string; texts: [string, boolean][] }[] = [
	{
		pattern: String.raw`\w*\w*\w*\w*!`,
		texts: [
			["a".repeat(n), false],
			[`${"a".repeat(n - 1)}!`, true],
		],
	},
	{ pattern: String.raw`\w*\w*!`, texts: [["a".repeat(n), false]] },
	{
		pattern: "(a|a)*b",
		texts: [
			["a".repeat(n), false],
			[`${"a".repeat(n - 1)}b`, true],
		],
	},
	{ pattern: "(a+)+b", texts: [["a".repeat(n), false]] },
	{ pattern: "(a*)*b", texts: [["a".repeat(n), false]] },
	{ pattern: "((((a*)*)*)*)*b", texts: [["a".repeat(n), false]] },
	{ pattern: "(a|aa)*b", texts: [["a".repeat(n), false]] },
	{ pattern: "(a|a?)+b", texts: [["a".repeat(n), false]] },
	{ pattern: "(x+x+)+y", texts: [["x".repeat(n), false]] },
	{ pattern: String.raw`(\w+\s?)*!`, texts: [["ab ".repeat(n / 4).padEnd(n, "a"), false]] },
	{ pattern: String.raw`(\w|\d|[a-z0-9])*!`, texts: [["a1".repeat(n / 2), false]] },
	{
		pattern: "(.*a){20}",
		texts: [
			["a".repeat(n), true],
			["b".repeat(n), false],
		],
	},
	{ pattern: "(?s)(.*a){20}", texts: [[`${"a\n".repeat(n / 2 - 1)}aa`, true]] },
	{ pattern: "(.*.*.*.*.*.*.*.*.*.*){10}x", texts: [["a".repeat(n), false]] },
	{ pattern: "^(([a-z])+.)+[A-Z]([a-z])+$", texts: [["aaaa".repeat(n / 4), false]] },
	{
		pattern: "(.{0,9}a){9}",
		texts: [
			["a".repeat(n), false],
			["ba".repeat(9), true],
		],
	},
	// As large as one pattern may be: DFA states blow up and re2js falls back to its NFA (still linear).
	{
		pattern: String.raw`[\s\S]{0,190}x`,
		texts: [
			["a".repeat(n), false],
			[`${"a".repeat(190)}x`, true],
		],
	},
	{
		pattern: "(?s)(.*a){75}",
		texts: [
			["a".repeat(n), true],
			["ab".repeat(n / 2), false],
		],
	},
];

describe("the worst patterns the rules accept", () => {
	for (const { pattern, texts } of worst)
		it(`${pattern} is an RE2 program of at most ${maxProgramSize} instructions, matched whole`, () => {
			expect(patternProblem(pattern)).toBeUndefined();
			expect(pattern.length).toBeLessThanOrEqual(maxPatternChars);
			const compiled = compilePattern(pattern);
			expect(compiled).toBeInstanceOf(RE2JS);
			expect(compiled.programSize()).toBeLessThanOrEqual(maxProgramSize);
			for (const [text, expected] of texts) {
				expect(text.length).toBeLessThanOrEqual(n);
				expect(fullMatch(pattern, text), `${pattern} on ${text.slice(0, 20)}… (${text.length})`).toBe(expected);
			}
		});

	it("match the whole text: a pattern naming one command does not match it inside another", () => {
		const rule = String.raw`Allow this bash command\?\s+rm -rf \./scratch`;
		expect(fullMatch(rule, "Allow this bash command?\n\n  rm -rf ./scratch")).toBe(true);
		expect(fullMatch(rule, "Allow this bash command?\n\n  rm -rf ./victim2; rm -rf ./scratch")).toBe(false);
		expect(fullMatch(rule, "Allow this bash command?\n\n  rm -rf ./scratch; rm -rf ~")).toBe(false);
		// The README's old example, `rm -rf \./scratch$`, found the command at the end of anything.
		expect(fullMatch(String.raw`rm -rf \./scratch$`, "rm -rf ./victim2; rm -rf ./scratch")).toBe(false);
	});

	it("never read a text longer than 4,096 characters", () => {
		expect(fullMatch("(?s).*", "a".repeat(n))).toBe(true);
		expect(fullMatch("(?s).*", "a".repeat(n + 1))).toBeUndefined();
	});
});

describe("what the rules refuse, with RE2's reason", () => {
	const refused: [string, RegExp][] = [
		[String.raw`(a)\1`, /not RE2 syntax.*\\1/],
		["(?=a)a", /not RE2 syntax.*\(\?=/],
		["(?!a)b", /not RE2 syntax/],
		["(?<=a)b", /not RE2 syntax/],
		["(?<!a)b", /not RE2 syntax/],
		[String.raw`\u0041`, /not RE2 syntax/],
		["a{1001}", /not RE2 syntax.*repeat count/],
		["((a{100}){100}){100}", /not RE2 syntax/],
		["(.*a){100}", /RE2 program of \d+ instructions, over the 400 allowed/],
		[String.raw`[\s\S]{1000}x`, /over the 400 allowed/],
		["a{1000}", /over the 400 allowed/],
		["x".repeat(maxPatternChars + 1), /1 to 200 characters/],
		["", /1 to 200 characters/],
	];
	for (const [pattern, reason] of refused)
		it(`${pattern.slice(0, 40)} → ${reason}`, () => {
			expect(patternProblem(pattern)).toMatch(reason);
			expect(() => compilePattern(pattern)).toThrow(reason);
		});

	it("a policy set whose patterns add up to more than 2,000 instructions", () => {
		const rule = (i: number) => ({ name: `r${i}`, match: { title: String.raw`[\s\S]{0,150}x` }, action: "deny" });
		expect(compilePattern(String.raw`[\s\S]{0,150}x`).programSize()).toBeGreaterThan(200);
		expect(PolicySet.safeParse({ rules: [1, 2, 3, 4, 5].map(rule) }).success).toBe(true);
		const parsed = PolicySet.safeParse({ rules: Array.from({ length: 10 }, (_, i) => rule(i)) });
		expect(parsed.success).toBe(false);
		expect(parsed.error?.issues[0]?.message).toMatch(/add up to \d+ instructions, over the 2000 allowed/);
	});
});

describe("user patterns never reach a JavaScript RegExp", () => {
	it("every RegExp built from a string in src is one of the gateway's own route patterns", () => {
		const src = resolve(import.meta.dirname, "../../src");
		const files = readdirSync(src, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts"));
		const dynamic = files.filter((f) => /\bRegExp\(/.test(readFileSync(join(src, f), "utf8")));
		// Route paths written in this repository (`/v1/sessions/{id}`), never a client's or an operator's text.
		const routePatterns = ["http/transport/route-pattern.ts"];
		expect(dynamic.map((f) => relative(src, join(src, f))).filter((f) => !routePatterns.includes(f))).toEqual([]);
	});

	it("a rule's pattern decides through the engine: the classic reproducer answers at once", () => {
		const approval = {
			id: "a1",
			sessionId: "s1",
			method: "confirm",
			title: "a".repeat(n),
			status: "pending",
		} as unknown as Approval;
		const rules = [{ name: "redos", match: { title: String.raw`\w*\w*\w*\w*!` }, action: "allow" as const }];
		expect(decide(rules, approval)).toBeUndefined();
		expect(decide(rules, { ...approval, title: `${"a".repeat(n - 1)}!` } as Approval)?.rule.name).toBe("redos");
	});
});
