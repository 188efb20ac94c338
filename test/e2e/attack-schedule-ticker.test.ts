import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";

// An attack on the ticker's shared slots: bob's agent stops its own pi (kill -STOP), so every tick
// his schedule sends as a follow-up waits for an answer that never comes (until --command-timeout-ms,
// 2 minutes). The ticker has 8 ticks in flight at most for the whole node: before the fix bob's one
// schedule took all 8 and alice's schedules did not fire at all.
vi.setConfig({ testTimeout: 150_000, hookTimeout: 60_000 });

let dir: string;
let gw: TestGateway;
let alice: string;
let bob: string;
beforeAll(async () => {
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-attack-ticker-"));
	const keysFile = join(dir, "keys.json");
	alice = createKey(keysFile, "alice", ["sessions:read", "sessions:write"]).secret;
	bob = createKey(keysFile, "bob", ["sessions:read", "sessions:write"]).secret;
	gw = await startTestGateway({ keysFile, scheduleMinIntervalSeconds: 1, scheduleCheckMs: 200 });
});
afterAll(async () => {
	await gw?.stop();
	rmSync(dir, { recursive: true, force: true });
});

const call = (secret: string, path: string, init: RequestInit & { json?: unknown } = {}) =>
	gw.api(path, { ...init, headers: { authorization: `Bearer ${secret}` } });
const session = async (secret: string) => {
	const { status, body } = await call(secret, "/v1/sessions", { method: "POST", json: {} });
	expect(status).toBe(201);
	return body.id as string;
};
const runsOf = async (secret: string, id: string, sid: string) =>
	(await call(secret, `/v1/sessions/${id}/schedules/${sid}`)).body.runs as { status: string }[];

it("three schedules of one principal due at the same minute all run (the per-principal bound defers, it does not drop)", async () => {
	const made: [string, string][] = [];
	for (let i = 0; i < 3; i++) {
		const id = await session(alice);
		const created = await call(alice, `/v1/sessions/${id}/schedules`, {
			method: "POST",
			json: { message: `echo: minute ${i}`, cron: "* * * * *" },
		});
		expect(created.status).toBe(201);
		made.push([id, created.body.id]);
	}
	for (const [id, sid] of made) {
		const runs = await until(async () => {
			const all = await runsOf(alice, id, sid);
			return all.some((r) => r.status !== "pending") && all;
		}, 90_000);
		expect(runs.map((r) => r.status)).toContain("started");
		await call(alice, `/v1/sessions/${id}`, { method: "DELETE" });
	}
});

it("bob's ticks that never get an answer cannot take every slot: alice's schedule still fires", async () => {
	const his = await session(bob);
	const stop = await call(bob, `/v1/sessions/${his}/prompt`, {
		method: "POST",
		json: { message: "bash: kill -STOP $PPID; sleep 600" },
	});
	expect(stop.status).toBe(202);
	const bobs = await call(bob, `/v1/sessions/${his}/schedules`, {
		method: "POST",
		json: { message: "echo: b", intervalSeconds: 1, whenBusy: "queue" },
	});
	expect(bobs.status).toBe(201);
	// Bob's ticks pile up: at least as many as the node has slots.
	await until(async () => (await runsOf(bob, his, bobs.body.id)).length >= 8, 60_000);

	const hers = await session(alice);
	const alices = await call(alice, `/v1/sessions/${hers}/schedules`, {
		method: "POST",
		json: { message: "echo: a", intervalSeconds: 1 },
	});
	expect(alices.status).toBe(201);
	await until(async () => (await runsOf(alice, hers, alices.body.id)).some((r) => r.status === "started"), 60_000);
	// Bob holds a few slots at most; his other ticks are recorded as skipped, not left waiting.
	const bobsRuns = await runsOf(bob, his, bobs.body.id);
	expect(bobsRuns.filter((r) => r.status === "pending").length).toBeLessThanOrEqual(2);
	expect((await call(bob, `/v1/sessions/${his}`, { method: "DELETE" })).status).toBe(204);
});
