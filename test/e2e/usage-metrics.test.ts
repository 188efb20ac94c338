import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { noPool, startTestGateway, type TestGateway } from "../helpers/gateway.ts";

// /metrics counts tokens and cost per principal from pi's own usage (real pi; the demo model
// reports its tokens and prices them, so the figures are real numbers).
let gw: TestGateway;
let dir: string;
let aliceKey: string;
let session: string;

beforeAll(async () => {
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-usage-"));
	const keysFile = join(dir, "keys.json");
	aliceKey = createKey(keysFile, "alice", ["sessions:read", "sessions:write"]).secret;
	// A tiny keep-recent budget lets pi compact these short conversations.
	mkdirSync(join(dir, "agent"));
	writeFileSync(join(dir, "agent", "settings.json"), JSON.stringify({ compaction: { keepRecentTokens: 5 } }));
	gw = await startTestGateway({ ...noPool, keysFile, piAgentDir: join(dir, "agent") });
	const res = await gw.api("/v1/sessions", {
		method: "POST",
		headers: { authorization: `Bearer ${aliceKey}` },
		json: {},
	});
	expect(res.status).toBe(201);
	session = res.body.id;
}, 60_000);
afterAll(async () => {
	await gw?.stop();
	rmSync(dir, { recursive: true, force: true });
});

const as = (_who: "alice") => ({ authorization: `Bearer ${aliceKey}` });

describe("usage in /metrics", () => {
	const series = (text: string, name: string, labels: string) =>
		Number(text.match(new RegExp(`^${name}\\{${labels}\\} (\\S+)$`, "m"))?.[1] ?? Number.NaN);

	it("counts each principal's tokens and cost as pi's usage reports them (what …/stats sums)", async () => {
		const run = await gw.api(`/v1/sessions/${session}/prompt?wait=true`, {
			method: "POST",
			headers: as("alice"),
			json: { message: "echo: one two three" },
		});
		expect(run.status).toBe(200);
		const stats = (await gw.api(`/v1/sessions/${session}/stats`, { headers: as("alice") })).body;
		expect(stats.tokens.input).toBeGreaterThan(0);
		expect(stats.tokens.output).toBeGreaterThan(0);
		expect(stats.cost).toBeGreaterThan(0);
		const text = await (await gw.fetch("/metrics")).text();
		expect(series(text, "pi_gateway_tokens_total", 'principal="alice",kind="input"')).toBe(stats.tokens.input);
		expect(series(text, "pi_gateway_tokens_total", 'principal="alice",kind="output"')).toBe(stats.tokens.output);
		expect(series(text, "pi_gateway_tokens_total", 'principal="alice",kind="cacheRead"')).toBe(stats.tokens.cacheRead);
		expect(series(text, "pi_gateway_cost_total", 'principal="alice"')).toBeCloseTo(stats.cost, 9);
		// Gateway-wide is the sum over principals; another principal's series are its own.
		expect(series(text, "pi_gateway_tokens_total", 'principal="admin",kind="input"')).toBeNaN();
		expect(text).toMatch(/^# TYPE pi_gateway_tokens_total counter$/m);
		expect(text).toMatch(/^# TYPE pi_gateway_cost_total counter$/m);
	});

	it("counts a compaction's model calls too, as the budget and …/stats do", async () => {
		const again = await gw.api(`/v1/sessions/${session}/prompt?wait=true`, {
			method: "POST",
			headers: as("alice"),
			json: { message: "echo: something to compact" },
		});
		expect(again.status).toBe(200);
		const compacted = await gw.api(`/v1/sessions/${session}/compact`, {
			method: "POST",
			headers: as("alice"),
			json: {},
		});
		expect(compacted.status).toBe(200);
		const stats = (await gw.api(`/v1/sessions/${session}/stats`, { headers: as("alice") })).body;
		const text = await (await gw.fetch("/metrics")).text();
		const kinds = ["input", "output", "cacheRead", "cacheWrite"] as const;
		const counted = kinds.reduce(
			(sum, kind) => sum + series(text, "pi_gateway_tokens_total", `principal="alice",kind="${kind}"`),
			0,
		);
		expect(counted).toBe(stats.tokens.total);
		expect(series(text, "pi_gateway_cost_total", 'principal="alice"')).toBeCloseTo(stats.cost, 9);
	});
});
