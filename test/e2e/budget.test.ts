import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { noPool, runEnded, startTestGateway, type TestGateway } from "../helpers/gateway.ts";

// Issue 31 item 3: a session's budget across runs, against real pi and the offline demo model, in
// README's layout. The demo model reports one output token per delta (`count: 30` is 30 of them)
// plus one input token per context message, at 1 and 2 USD per million.
let root: string;
let gw: TestGateway;
const dirs = () => ({ dataDir: join(root, "data"), piAgentDir: join(root, "agent") });

beforeAll(async () => {
	root = mkdtempSync(join(tmpdir(), "pi-gateway-budget-"));
	mkdirSync(join(root, "agent"));
	gw = await startTestGateway({ ...noPool, ...dirs() });
});
afterAll(async () => {
	await gw?.stop();
	rmSync(root, { recursive: true, force: true });
});

const post = (path: string, json: unknown, headers: Record<string, string> = {}) =>
	gw.fetch(path, {
		method: "POST",
		headers: { "content-type": "application/json", ...headers },
		body: JSON.stringify(json),
	});

async function metric(name: string, labels: string): Promise<number> {
	const text = await (await gw.fetch("/metrics")).text();
	const line = text.split("\n").find((l) => l.startsWith(`${name}{${labels}}`));
	return line ? Number(line.split(" ").at(-1)) : 0;
}

/** A run command refused for the budget: 409 problem+json, and nothing reached pi. */
async function expectRefused(id: string, path: string, headers: Record<string, string> = {}) {
	// The last run's run_changes comes after its agent_settled: logged before the count starts.
	await runEnded(gw, id);
	const before = (await gw.api(`/v1/sessions/${id}`)).body.lastEventId;
	const res = await post(`/v1/sessions/${id}/${path}`, { message: "echo: more" }, headers);
	expect(res.status).toBe(409);
	expect(res.headers.get("content-type")).toContain("application/problem+json");
	const problem = (await res.json()) as { code: string; budget: { exhausted: string } };
	expect(problem.code).toBe("budget_exhausted");
	expect((await gw.api(`/v1/sessions/${id}`)).body.lastEventId).toBe(before);
	return problem;
}

describe("a session budget", () => {
	it("counts usage across runs, refuses the next run command once spent, and survives a restart", async () => {
		const id = await gw.session({ budget: { maxTokens: 20 } });
		const created = await gw.api(`/v1/sessions/${id}`);
		expect(created.body.budget).toEqual({
			maxTokens: 20,
			maxCostUsd: null,
			usedTokens: 0,
			usedCostUsd: 0,
			exhausted: null,
		});
		// The run in progress is not cut by the budget (run limits do that): it ends normally.
		const run = await gw.api(`/v1/sessions/${id}/prompt?wait=60`, { method: "POST", json: { message: "count: 30" } });
		expect(run.status).toBe(200);
		expect(run.body.text).toContain("30");
		const spent = await gw.api(`/v1/sessions/${id}/budget`);
		expect(spent.status).toBe(200);
		expect(spent.body.usedTokens).toBeGreaterThan(20);
		expect(spent.body.exhausted).toBe("tokens");
		const refusals = await metric("pi_gateway_budget_refusals_total", 'kind="tokens"');
		const problem = await expectRefused(id, "prompt?wait=10");
		expect(problem.budget.exhausted).toBe("tokens");
		await expectRefused(id, "prompt", { accept: "text/event-stream" });
		await expectRefused(id, "prompt/stream");
		await expectRefused(id, "follow-up");
		await expectRefused(id, "steer");
		expect(await metric("pi_gateway_budget_refusals_total", 'kind="tokens"')).toBe(refusals + 5);

		// A restart keeps the usage: the session comes back stopped and still refuses.
		const used = spent.body.usedTokens;
		await gw.stop();
		gw = await startTestGateway({ ...noPool, ...dirs() });
		const back = await gw.api(`/v1/sessions/${id}`);
		expect(back.body.status).toBe("stopped");
		expect(back.body.budget).toMatchObject({ maxTokens: 20, usedTokens: used, exhausted: "tokens" });
		await expectRefused(id, "prompt?wait=10");

		// Raised, it lets runs through again (the stopped session starts on demand).
		const raised = await gw.api(`/v1/sessions/${id}/budget`, {
			method: "PUT",
			json: { maxTokens: 100000 },
		});
		expect(raised.status).toBe(200);
		expect(raised.body).toMatchObject({ maxTokens: 100000, maxCostUsd: null, usedTokens: used, exhausted: null });
		const again = await gw.api(`/v1/sessions/${id}/prompt?wait=60`, { method: "POST", json: { message: "echo: ok" } });
		expect(again.status).toBe(200);
		expect(again.body.text).toBe("ok");
		expect((await gw.api(`/v1/sessions/${id}/budget`)).body.usedTokens).toBeGreaterThan(used);
	});

	it("refuses past its cost too", async () => {
		const id = await gw.session({ budget: { maxCostUsd: 0.00001 } });
		const run = await gw.api(`/v1/sessions/${id}/prompt?wait=60`, { method: "POST", json: { message: "count: 30" } });
		expect(run.status).toBe(200);
		const problem = await expectRefused(id, "prompt");
		expect(problem.budget.exhausted).toBe("cost");
	});

	it("a session without one has no limits and counts its usage", async () => {
		const id = await gw.session();
		await gw.api(`/v1/sessions/${id}/prompt?wait=60`, { method: "POST", json: { message: "count: 3" } });
		const { body } = await gw.api(`/v1/sessions/${id}/budget`);
		expect(body).toMatchObject({ maxTokens: null, maxCostUsd: null, exhausted: null });
		expect(body.usedTokens).toBeGreaterThan(0);
	});

	it("bad budgets are 400 problem+json, at create and on PUT", async () => {
		const res = await post("/v1/sessions", { budget: { maxTokens: 0 } });
		expect(res.status).toBe(400);
		expect(res.headers.get("content-type")).toContain("application/problem+json");
		const id = await gw.session();
		for (const body of [{ maxCostUsd: -1 }, { maxTokens: 1.5 }, { tokens: 5 }]) {
			const put = await gw.fetch(`/v1/sessions/${id}/budget`, {
				method: "PUT",
				headers: { "content-type": "application/json" },
				body: JSON.stringify(body),
			});
			expect(put.status).toBe(400);
			expect(put.headers.get("content-type")).toContain("application/problem+json");
		}
	});
});
