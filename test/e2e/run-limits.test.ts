import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { noPool, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { collect } from "../helpers/sse.ts";

// Issue 31 item 3: per-run limits against real pi and the offline demo model, in README's layout.
// `bash: CMD` takes two turns (the tool call, then the report), `count: N` reports N+1 tokens or
// so (one per delta, one per context message), `slow: N` takes N × 100 ms.
let gw: TestGateway;

beforeAll(async () => {
	gw = await startTestGateway(noPool);
});
afterAll(() => gw?.stop());

const waited = (id: string, json: unknown) => gw.api(`/v1/sessions/${id}/prompt?wait=60`, { method: "POST", json });

/** While the first turn streams (`slow: 40`, 4 s: room for a busy machine), a follow-up makes pi take a second turn in the same run. */
async function joinSecondTurn(id: string): Promise<void> {
	await until(async () => (await gw.api(`/v1/sessions/${id}`)).body.status === "running");
	const followUp = await gw.api(`/v1/sessions/${id}/follow-up`, { method: "POST", json: { message: "slow: 30" } });
	expect(followUp.status).toBe(202);
}

async function metric(name: string, labels: string): Promise<number> {
	const text = await (await gw.fetch("/metrics")).text();
	const line = text.split("\n").find((l) => l.startsWith(`${name}{${labels}}`));
	return line ? Number(line.split(" ").at(-1)) : 0;
}

describe("a run past its limit is aborted and its result names the limit", () => {
	it("maxTurns: a second turn (a follow-up joining the run) is cut as it starts", async () => {
		const id = await gw.session();
		const before = await metric("pi_gateway_run_limits_reached_total", 'kind="turns"');
		const result = waited(id, { message: "slow: 40", limits: { maxTurns: 1 } });
		await joinSecondTurn(id);
		const { status, body } = await result;
		expect(status).toBe(200);
		expect(body.limit).toEqual({ kind: "turns", allowed: 1, used: 2 });
		expect(body.aborted).toBe(true);
		// The second turn's answer never finished: it was cut mid-stream.
		const last = body.messages.at(-1);
		expect(last).toMatchObject({ role: "assistant", stopReason: "aborted" });
		expect(await metric("pi_gateway_run_limits_reached_total", 'kind="turns"')).toBe(before + 1);
	});

	it("a run within its limits carries no `limit`", async () => {
		const id = await gw.session();
		const { status, body } = await waited(id, { message: "bash: echo one", limits: { maxTurns: 2 } });
		expect(status).toBe(200);
		expect(body).not.toHaveProperty("limit");
		expect(body.aborted).toBe(false);
		expect(body.text).toContain("one");
	});

	it("maxDurationMs: `slow: 100` (10 s) stops near the limit", async () => {
		const id = await gw.session();
		const { status, body } = await waited(id, { message: "slow: 100", limits: { maxDurationMs: 500 } });
		expect(status).toBe(200);
		expect(body.limit.kind).toBe("duration");
		expect(body.limit.allowed).toBe(500);
		expect(body.limit.used).toBeGreaterThanOrEqual(500);
		expect(body.aborted).toBe(true);
		const text: string = body.text ?? "";
		expect(text.endsWith(" 100")).toBe(false);
	});

	it("maxTokens: the usage pi reports for `count: 30` passes 10", async () => {
		const id = await gw.session();
		const { status, body } = await waited(id, { message: "count: 30", limits: { maxTokens: 10 } });
		expect(status).toBe(200);
		expect(body.limit).toMatchObject({ kind: "tokens", allowed: 10 });
		expect(body.limit.used).toBeGreaterThan(10);
	});

	it("maxCostUsd: the demo model's price (2 USD per million output tokens) passes a tiny allowance", async () => {
		const id = await gw.session();
		const { status, body } = await waited(id, { message: "count: 30", limits: { maxCostUsd: 0.00001 } });
		expect(status).toBe(200);
		expect(body.limit).toMatchObject({ kind: "cost", allowed: 0.00001 });
		expect(body.limit.used).toBeGreaterThan(0.00001);
	});

	it("the stream carries run_limit_reached {runId, limit} before agent_settled", async () => {
		const id = await gw.session();
		const stream = gw.fetch(`/v1/sessions/${id}/prompt`, {
			method: "POST",
			headers: { accept: "text/event-stream", "content-type": "application/json" },
			body: JSON.stringify({ message: "slow: 40", limits: { maxTurns: 1 } }),
			signal: AbortSignal.timeout(30_000),
		});
		await joinSecondTurn(id);
		const res = await stream;
		expect(res.status).toBe(200);
		const frames = await collect(res);
		const runId = frames[0]?.json.runId;
		const hit = frames.findIndex((f) => f.event === "run_limit_reached");
		expect(hit).toBeGreaterThan(0);
		expect(frames[hit]?.json).toEqual({
			type: "run_limit_reached",
			sessionId: id,
			runId,
			limit: { kind: "turns", allowed: 1, used: 2 },
		});
		expect(frames.at(-1)?.event).toBe("agent_settled");
		expect(frames.at(-1)?.json.aborted).toBe(true);
		// Frames arrive in log order.
		const ids = frames.slice(1).map((f) => Number(f.id));
		expect(ids).toEqual([...ids].sort((a, b) => a - b));
	});

	it("with outputSchema, a limit ends the run without a repair turn: outputError says why", async () => {
		const id = await gw.session();
		const { status, body } = await waited(id, {
			message: "bash: echo three",
			outputSchema: { type: "object" },
			limits: { maxTurns: 1 },
		});
		expect(status).toBe(200);
		expect(body.limit).toMatchObject({ kind: "turns" });
		expect(body.outputError.message).toContain("run limit");
		expect(body).not.toHaveProperty("output");
		await until(async () => (await gw.api(`/v1/sessions/${id}`)).body.status === "idle");
	});
});

describe("bad limits", () => {
	it.each([[{ maxTurns: 0 }], [{ maxTokens: -5 }], [{ maxCostUsd: 0 }], [{ maxDurationMs: 1.5 }], [{ maxSteps: 3 }]])(
		"are 400 problem+json before pi: %j",
		async (limits) => {
			const id = await gw.session();
			const before = (await gw.api(`/v1/sessions/${id}`)).body.lastEventId;
			const res = await gw.fetch(`/v1/sessions/${id}/prompt`, {
				method: "POST",
				headers: { "content-type": "application/json" },
				body: JSON.stringify({ message: "echo: hi", limits }),
			});
			expect(res.status).toBe(400);
			expect(res.headers.get("content-type")).toContain("application/problem+json");
			expect((await gw.api(`/v1/sessions/${id}`)).body.lastEventId).toBe(before);
		},
	);
});
