import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";

// Real pi, demo model: a pool of two pre-started processes.
let gw: TestGateway;
const poolPids = () => new Set(gw.registry.pool?.readyPids ?? []);

beforeAll(async () => {
	gw = await startTestGateway({ warmPool: 2 });
	await until(() => gw.registry.pool?.readyCount === 2, 20_000);
});
afterAll(() => gw?.stop());

describe("the warm pool", () => {
	it("serves a plain create (a name allowed) from a pre-started pi, then refills", async () => {
		const before = poolPids();
		expect(before.size).toBe(2);
		const res = await gw.api("/v1/sessions", { method: "POST", json: { name: "warm" } });
		expect(res.status).toBe(201);
		expect(before.has(res.body.pid)).toBe(true);
		expect(res.body).toMatchObject({ name: "warm", status: "idle", persist: true });
		expect((await gw.api(`/v1/sessions/${res.body.id}/state`)).body.sessionName).toBe("warm");
		const run = await gw.api(`/v1/sessions/${res.body.id}/prompt?wait=true`, {
			method: "POST",
			json: { message: "echo: warm hello" },
		});
		expect(run.body.text).toBe("warm hello");
		await until(() => gw.registry.pool?.readyCount === 2, 20_000);
		expect(poolPids().has(res.body.pid)).toBe(false);
	});

	it("starts other option sets cold", async () => {
		const before = poolPids();
		const res = await gw.api("/v1/sessions", { method: "POST", json: { persist: false } });
		expect(res.status).toBe(201);
		expect(before.has(res.body.pid)).toBe(false);
		expect(poolPids()).toEqual(before);
	});

	it("shows the pool in /metrics and counts it against live processes", async () => {
		const metrics = await gw.api("/metrics");
		expect(metrics.body).toContain("pi_gateway_warm_pool_size 2");
		// Every pi child counts as a process, the pool's included (it read 0 beside a pool of 2).
		const live = gw.registry.list().filter((s) => s.isAlive && s.pid !== undefined).length;
		expect(metrics.body).toMatch(new RegExp(`^pi_gateway_pi_processes ${live + 2}$`, "m"));
		expect(gw.registry.liveCount).toBe(gw.registry.list().filter((s) => s.hasProcess).length + 2);
	});
});
