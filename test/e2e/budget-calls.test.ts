import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { noPool, runEnded, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";

// Issue 41 item 4: a session's budget counts every model call the session makes, not only a run's
// assistant messages: compactions (by route, by /rpc, and pi's own on a context overflow), repair
// turns and client-tool rounds; and a spent budget refuses compact before pi as it refuses a prompt.
// Real pi and the offline demo model in README's layout; the demo model answers a compaction's
// summary request like any prompt, and reports its usage.
let root: string;
let gw: TestGateway;

beforeAll(async () => {
	root = mkdtempSync(join(tmpdir(), "pi-gateway-budget-calls-"));
	mkdirSync(join(root, "agent"));
	// A tiny keep-recent budget lets pi compact these short conversations.
	writeFileSync(join(root, "agent", "settings.json"), JSON.stringify({ compaction: { keepRecentTokens: 5 } }));
	gw = await startTestGateway({ ...noPool, dataDir: join(root, "data"), piAgentDir: join(root, "agent") });
});
afterAll(async () => {
	await gw?.stop();
	rmSync(root, { recursive: true, force: true });
});

const lookupPrice = {
	name: "lookup_price",
	description: "The price of a product in EUR, by its SKU",
	parameters: { type: "object", properties: { sku: { type: "string" } }, required: ["sku"] },
};

const prompt = (id: string, json: Record<string, unknown>) =>
	gw.api(`/v1/sessions/${id}/prompt?wait=60`, { method: "POST", json });

async function budgetOf(id: string) {
	const { status, body } = await gw.api(`/v1/sessions/${id}/budget`);
	expect(status).toBe(200);
	return body as { usedTokens: number; usedCostUsd: number; exhausted: string | null };
}

/**
 * The budget counts what pi's own session stats count (every assistant message, compaction and
 * tool usage pi recorded): the two agree once the session's last run has ended.
 */
async function expectBudgetMatchesPi(id: string) {
	await runEnded(gw, id);
	const stats = (await gw.api(`/v1/sessions/${id}/stats`)).body as { tokens: { total: number }; cost: number };
	const budget = await budgetOf(id);
	expect(budget.usedTokens).toBe(stats.tokens.total);
	expect(budget.usedCostUsd).toBeCloseTo(stats.cost, 12);
	return budget;
}

/** What a refused command must leave alone: pi's log, its messages and the usage. */
async function untouched(id: string) {
	const session = (await gw.api(`/v1/sessions/${id}`)).body;
	const messages = (await gw.api(`/v1/sessions/${id}/messages`)).body;
	return { lastEventId: session.lastEventId, messages, budget: session.budget };
}

describe("compact under a session budget", () => {
	it("is refused by its route and by /rpc once the budget is spent, before pi", async () => {
		const id = await gw.session({ budget: { maxTokens: 20 } });
		expect((await prompt(id, { message: "count: 30" })).status).toBe(200);
		await runEnded(gw, id);
		expect((await budgetOf(id)).exhausted).toBe("tokens");
		const before = await untouched(id);

		for (const [path, body] of [
			["compact", {}],
			["compact", { customInstructions: "keep the numbers" }],
			["rpc", { type: "compact" }],
		] as const) {
			const res = await gw.fetch(`/v1/sessions/${id}/${path}`, {
				method: "POST",
				headers: { "content-type": "application/json" },
				body: JSON.stringify(body),
			});
			expect(res.status).toBe(409);
			expect(res.headers.get("content-type")).toContain("application/problem+json");
			const problem = (await res.json()) as { code: string; budget: { exhausted: string; usedTokens: number } };
			expect(problem.code).toBe("budget_exhausted");
			expect(problem.budget).toMatchObject({ exhausted: "tokens", usedTokens: before.budget.usedTokens });
		}
		// pi never got it: no event, the conversation as it was, no usage added.
		expect(await untouched(id)).toEqual(before);

		// The refusal was the budget's: raised, the same compaction runs (and is counted).
		await gw.api(`/v1/sessions/${id}/budget`, { method: "PUT", json: { maxTokens: 1_000_000 } });
		const compacted = await gw.api(`/v1/sessions/${id}/compact`, { method: "POST", json: {} });
		expect(compacted.status).toBe(200);
		expect((await budgetOf(id)).usedTokens).toBeGreaterThan(before.budget.usedTokens);
	});

	it("counts a compaction's usage, by its route and by /rpc", async () => {
		const id = await gw.session();
		expect((await prompt(id, { message: "echo: something to compact" })).status).toBe(200);
		const before = await expectBudgetMatchesPi(id);

		const compacted = await gw.api(`/v1/sessions/${id}/compact`, { method: "POST", json: {} });
		expect(compacted.status).toBe(200);
		const usage = compacted.body.usage as { totalTokens: number; cost: { total: number } };
		expect(usage.totalTokens).toBeGreaterThan(0);
		const after = await expectBudgetMatchesPi(id);
		expect(after.usedTokens).toBe(before.usedTokens + usage.totalTokens);
		expect(after.usedCostUsd).toBeCloseTo(before.usedCostUsd + usage.cost.total, 12);

		expect((await prompt(id, { message: "echo: more to compact" })).status).toBe(200);
		const viaRpc = await gw.api(`/v1/sessions/${id}/rpc`, { method: "POST", json: { type: "compact" } });
		expect(viaRpc.status).toBe(200);
		expect(viaRpc.body.usage.totalTokens).toBeGreaterThan(0);
		const last = await expectBudgetMatchesPi(id);
		expect(last.usedTokens).toBeGreaterThan(after.usedTokens + viaRpc.body.usage.totalTokens);
	});

	it("counts the compaction pi runs itself on a context overflow, toward the budget and the run's limits", async () => {
		const id = await gw.session();
		expect((await prompt(id, { message: "echo: an earlier exchange" })).status).toBe(200);
		const before = await expectBudgetMatchesPi(id);
		// The demo model's provider error reads as a context overflow: pi compacts and tries again.
		const run = await prompt(id, { message: "fail: prompt is too long", limits: { maxTokens: 1 } });
		expect(run.status).toBe(200);
		const after = await expectBudgetMatchesPi(id);
		// The failed attempts report no usage: what was added is the compaction's.
		expect(after.usedTokens).toBeGreaterThan(before.usedTokens);
		expect(run.body.limit).toMatchObject({ kind: "tokens", allowed: 1 });
	});
});

describe("turns the gateway or the client start inside a run", () => {
	it("counts structured output's repair turns, and sends none once the budget is spent", async () => {
		const schema = { type: "object", properties: { n: { type: "integer" } }, required: ["n"] };
		const id = await gw.session();
		const run = await prompt(id, { message: 'repair: {"n": 7}', outputSchema: schema });
		expect(run.body.output).toEqual({ n: 7 });
		expect(run.body.messages.filter((m: { role: string }) => m.role === "assistant")).toHaveLength(2);
		await expectBudgetMatchesPi(id);

		// The first answer spends the budget: the repair prompt is refused before pi, like any prompt.
		const spent = await gw.session({ budget: { maxTokens: 5 } });
		const refused = await prompt(spent, { message: 'repair: {"n": 7}', outputSchema: schema });
		expect(refused.status).toBe(200);
		expect(refused.body.messages.filter((m: { role: string }) => m.role === "assistant")).toHaveLength(1);
		expect(refused.body.outputError.message).toContain("budget");
		await expectBudgetMatchesPi(spent);
	});

	it("counts a client tool's round: the call and the answer after the program's result", async () => {
		const id = await gw.session({ clientTools: [lookupPrice] });
		const run = prompt(id, { message: 'tool: lookup_price {"sku":"A-1"}' });
		const pending = await until(async () => {
			const { body } = await gw.api(`/v1/sessions/${id}/tool-calls?status=pending`);
			return body.toolCalls[0] as { id: string } | undefined;
		});
		const answered = await gw.api(`/v1/sessions/${id}/tool-calls/${pending.id}`, {
			method: "POST",
			json: { output: "19.90" },
		});
		expect(answered.status).toBe(200);
		const result = (await run).body;
		expect(result.text).toBe("19.90");
		expect(result.messages.filter((m: { role: string }) => m.role === "assistant")).toHaveLength(2);
		const budget = await expectBudgetMatchesPi(id);
		const runTokens = result.messages
			.filter((m: { role: string }) => m.role === "assistant")
			.reduce((sum: number, m: { usage: { totalTokens: number } }) => sum + m.usage.totalTokens, 0);
		expect(budget.usedTokens).toBe(runTokens);
	});
});
