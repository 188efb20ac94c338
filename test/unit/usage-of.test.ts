import { describe, expect, it } from "vitest";
import { EventLog, type LoggedEvent } from "../../src/sessions/events/event-log.ts";
import { usageOf } from "../../src/sessions/events/usage.ts";
import { Budget } from "../../src/sessions/session/budget.ts";

// Issue 41 item 4: every event of pi 1.6 that reports a model call's usage, as pi prints it. The
// demo model makes no cache-warming request and no tool of its own reports usage, so those two are
// held here against pi's shapes (agent-session.js: entry_appended for a `usage` entry; a tool
// result's `usage`).
const usage = (input: number, output: number, total: number) => ({
	input,
	output,
	cacheRead: 0,
	cacheWrite: 0,
	totalTokens: input + output,
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total },
});

const event = (json: { type: string } & Record<string, unknown>): LoggedEvent => ({
	seq: 1,
	type: json.type,
	data: Buffer.from(JSON.stringify(json)),
});

const reported = {
	assistant: event({ type: "message_end", message: { role: "assistant", content: [], usage: usage(3, 4, 0.5) } }),
	toolResult: event({
		type: "message_end",
		message: { role: "toolResult", toolCallId: "t1", content: [], usage: usage(10, 2, 0.25) },
	}),
	compaction: event({
		type: "compaction_end",
		reason: "threshold",
		result: { summary: "…", tokensBefore: 900, usage: usage(100, 20, 1) },
		aborted: false,
		willRetry: false,
	}),
	cacheWarm: event({
		type: "entry_appended",
		entry: { type: "usage", kind: "cache_warm", provider: "anthropic", model: "m", usage: usage(0, 1, 0.125) },
	}),
};

const none = [
	event({ type: "message_end", message: { role: "user", content: "hi", usage: usage(1, 1, 1) } }),
	event({ type: "compaction_end", reason: "manual", aborted: true, willRetry: false }),
	event({ type: "compaction_end", reason: "overflow", aborted: false, willRetry: false, errorMessage: "failed" }),
	event({ type: "entry_appended", entry: { type: "custom", customType: "x", data: { usage: usage(5, 5, 5) } } }),
	event({ type: "message_update", message: { role: "assistant", usage: usage(9, 9, 9) } }),
	{ seq: 1, type: "compaction_end", data: Buffer.from("not json") },
];

describe("usageOf", () => {
	it("reads the usage of each kind of model call pi reports", () => {
		expect(usageOf(reported.assistant)).toEqual({ tokens: 7, costUsd: 0.5 });
		expect(usageOf(reported.toolResult)).toEqual({ tokens: 12, costUsd: 0.25 });
		expect(usageOf(reported.compaction)).toEqual({ tokens: 120, costUsd: 1 });
		expect(usageOf(reported.cacheWarm)).toEqual({ tokens: 1, costUsd: 0.125 });
	});

	it("reads nothing from events that report no call", () => {
		for (const e of none) expect(usageOf(e)).toEqual({ tokens: 0, costUsd: 0 });
	});

	it("a session's budget sums them all", () => {
		const log = new EventLog(100, 1_000_000);
		const budget = new Budget(log);
		for (const e of [...Object.values(reported), ...none]) log.append(e.type, e.data.toString());
		expect(budget.view()).toMatchObject({ usedTokens: 140, usedCostUsd: 1.875 });
	});
});
