import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createKey, revokeKeys } from "../../src/http/auth/keys.ts";
import { noPool, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { startReceiver } from "../helpers/receiver.ts";

// Scheduled runs (issue 47 item 1) on one node (SQLite), real pi with the demo model. The minimum
// interval is lowered to 1 s (--schedule-min-interval-seconds, for tests) and the ticker looks every
// 200 ms, so ticks come within seconds; every wait polls for a state, none measures time.
vi.setConfig({ testTimeout: 90_000, hookTimeout: 60_000 });

let dir: string;
let gw: TestGateway;
let alice: string;
let bob: string;
let carol: string;
let keysFile: string;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
	receiver = await startReceiver();
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-schedules-"));
	keysFile = join(dir, "keys.json");
	alice = createKey(keysFile, "alice", ["sessions:read", "sessions:write"]).secret;
	bob = createKey(keysFile, "bob", ["sessions:read", "sessions:write"]).secret;
	carol = createKey(keysFile, "carol", ["sessions:read", "sessions:write"]).secret;
	gw = await startTestGateway({
		...noPool,
		keysFile,
		scheduleMinIntervalSeconds: 1,
		scheduleCheckMs: 200,
		maxSchedulesPerPrincipal: 4,
		maxSchedulesPerSession: 3,
		webhookAllow: ["loopback"],
	});
	// The admin's token registers a webhook for the ticks (webhooks need the admin scope).
	const hook = await gw.api("/v1/webhooks", {
		method: "POST",
		json: { url: receiver.url, events: ["schedule.fired", "schedule.failed"] },
	});
	expect(hook.status).toBe(201);
});
afterAll(async () => {
	await gw?.stop();
	await receiver?.close();
	rmSync(dir, { recursive: true, force: true });
});

const as = (secret: string) => ({ authorization: `Bearer ${secret}` });
const call = (secret: string, path: string, init: RequestInit & { json?: unknown } = {}) =>
	gw.api(path, { ...init, headers: { ...as(secret), ...(init.headers as Record<string, string>) } });
const session = async (secret: string, body: Record<string, unknown> = {}) => {
	const { status, body: created } = await call(secret, "/v1/sessions", { method: "POST", json: body });
	expect(status).toBe(201);
	return created.id as string;
};
const schedule = (secret: string, id: string, json: Record<string, unknown>) =>
	call(secret, `/v1/sessions/${id}/schedules`, { method: "POST", json });
/** The schedule once `check` holds for its detail (runs included). */
const whenSchedule = (secret: string, id: string, scheduleId: string, check: (detail: any) => boolean, ms = 60_000) =>
	until(async () => {
		const { body } = await call(secret, `/v1/sessions/${id}/schedules/${scheduleId}`);
		return check(body) && body;
	}, ms);
const answered = (runs: { status: string }[]) => runs.filter((r) => r.status !== "pending");

describe("schedules", () => {
	it("an interval schedule prompts its session as its owner, each tick a run of its own; PATCH pauses it, DELETE removes it", async () => {
		const id = await session(alice);
		const created = await schedule(alice, id, { message: "echo: tick", intervalSeconds: 1 });
		expect(created.status).toBe(201);
		expect(created.res.headers.get("location")).toBe(`/v1/sessions/${id}/schedules/${created.body.id}`);
		expect(created.body).toMatchObject({
			sessionId: id,
			message: "echo: tick",
			intervalSeconds: 1,
			cron: null,
			timezone: null,
			enabled: true,
			missed: "run-once",
			whenBusy: "skip",
		});
		expect(Date.parse(created.body.nextRunAt)).toBeGreaterThan(Date.parse(created.body.createdAt));
		const sid = created.body.id as string;

		const ticked = await whenSchedule(
			alice,
			id,
			sid,
			(s) => s.runs.filter((r: any) => r.status === "started").length >= 2,
		);
		const started = ticked.runs.filter((r: { status: string }) => r.status === "started");
		expect(new Set(started.map((r: { runId: string }) => r.runId)).size).toBe(started.length);
		// The ticks are the session's runs: its conversation holds their prompts and answers.
		await until(async () => {
			const { body } = await call(alice, `/v1/sessions/${id}/messages`);
			return body.messages.filter((m: any) => m.role === "user").length >= 2;
		});
		// A webhook hears of each fired tick.
		const told = await until(() =>
			receiver.of("schedule.fired").find((r) => r.json.data.runId === (started[0] as { runId: string }).runId),
		);
		expect(told.json.data).toMatchObject({ sessionId: id, scheduleId: sid, status: "started" });
		const listed = await call(alice, `/v1/sessions/${id}/schedules`);
		expect(listed.body.schedules.map((s: { id: string }) => s.id)).toEqual([sid]);

		const paused = await call(alice, `/v1/sessions/${id}/schedules/${sid}`, {
			method: "PATCH",
			json: { enabled: false },
		});
		expect(paused.status).toBe(200);
		expect(paused.body).toMatchObject({ enabled: false, nextRunAt: null });
		const resumed = await call(alice, `/v1/sessions/${id}/schedules/${sid}`, {
			method: "PATCH",
			json: { enabled: true, cron: "*/5 * * * *", timezone: "Europe/Paris" },
		});
		expect(resumed.body).toMatchObject({
			enabled: true,
			intervalSeconds: null,
			cron: "*/5 * * * *",
			timezone: "Europe/Paris",
		});
		expect(new Date(resumed.body.nextRunAt).getUTCMinutes() % 5).toBe(0);

		expect((await call(alice, `/v1/sessions/${id}/schedules/${sid}`, { method: "DELETE" })).status).toBe(204);
		expect((await call(alice, `/v1/sessions/${id}/schedules/${sid}`)).body.code).toBe("schedule_not_found");
	});

	it("a disabled schedule never fires, while an enabled one beside it does", async () => {
		const id = await session(alice);
		const off = await schedule(alice, id, { message: "echo: off", intervalSeconds: 1, enabled: false });
		expect(off.body).toMatchObject({ enabled: false, nextRunAt: null });
		const on = await schedule(alice, id, { message: "echo: on", intervalSeconds: 1 });
		await whenSchedule(alice, id, on.body.id, (s) => answered(s.runs).length >= 3);
		expect((await call(alice, `/v1/sessions/${id}/schedules/${off.body.id}`)).body.runs).toEqual([]);
		await call(alice, `/v1/sessions/${id}`, { method: "DELETE" });
	});

	it("bob cannot see, change, delete or add to alice's schedules, nor use up her share of them", async () => {
		const hers = await session(alice);
		const sid = (await schedule(alice, hers, { message: "echo: hers", intervalSeconds: 3600 })).body.id;
		const paths = [`/v1/sessions/${hers}/schedules`, `/v1/sessions/${hers}/schedules/${sid}`];
		for (const path of paths) expect((await call(bob, path)).status).toBe(404);
		const patched = await call(bob, paths[1] as string, { method: "PATCH", json: { message: "echo: bob's" } });
		expect(patched.status).toBe(404);
		expect((await call(bob, paths[1] as string, { method: "DELETE" })).status).toBe(404);
		expect((await schedule(bob, hers, { message: "echo: bob", intervalSeconds: 3600 })).status).toBe(404);
		expect((await call(alice, paths[1] as string)).body.message).toBe("echo: hers");
		// A share, even to write, does not reach the owner's schedules: they spend her budget.
		const shared = await call(alice, `/v1/sessions/${hers}/access`, {
			method: "PUT",
			json: { grants: [{ principal: "bob", can: ["write"] }] },
		});
		expect(shared.status).toBe(200);
		expect((await call(bob, `/v1/sessions/${hers}`)).status).toBe(200);
		for (const path of paths) expect((await call(bob, path)).status).toBe(404);
		// Nor can he send a tick of hers: the header that names one is refused from a socket.
		const forged = await gw.fetch(`/v1/sessions/${hers}/prompt`, {
			method: "POST",
			headers: { ...as(bob), "content-type": "application/json", "x-pi-gateway-schedule-tick": `${sid} 1` },
			body: JSON.stringify({ message: "echo: forged" }),
		});
		expect(forged.status).toBe(401);

		// Bob's schedules count against his own caps (3 a session, 4 a principal here), never hers.
		const his = [await session(bob), await session(bob)];
		for (let i = 0; i < 3; i++)
			expect((await schedule(bob, his[0] as string, { message: "echo: b", intervalSeconds: 3600 })).status).toBe(201);
		const fourth = await schedule(bob, his[0] as string, { message: "echo: b", intervalSeconds: 3600 });
		expect(fourth.status).toBe(429);
		expect(fourth.body.code).toBe("too_many_schedules");
		expect((await schedule(bob, his[1] as string, { message: "echo: b", intervalSeconds: 3600 })).status).toBe(201);
		const fifth = await schedule(bob, his[1] as string, { message: "echo: b", intervalSeconds: 3600 });
		expect(fifth.status).toBe(429);
		expect(fifth.body.detail).toMatch(/bob has 4 schedules/);
		expect((await schedule(alice, hers, { message: "echo: still mine", intervalSeconds: 3600 })).status).toBe(201);
		// Deleting a session takes its schedules with it.
		expect((await call(bob, `/v1/sessions/${his[0]}`, { method: "DELETE" })).status).toBe(204);
		expect((await schedule(bob, his[1] as string, { message: "echo: b", intervalSeconds: 3600 })).status).toBe(201);
	});

	it("refuses bad timing with 400 naming the field, and stores nothing", async () => {
		const id = await session(alice);
		const bad: [Record<string, unknown>, string][] = [
			[{ intervalSeconds: 0 }, "intervalSeconds"],
			[{ cron: "61 * * * *" }, "cron"],
			[{ cron: "*/5 * * * * *" }, "cron"],
			[{ cron: "@hourly" }, "cron"],
			[{ cron: "0 7 * * *", timezone: "Mars/Olympus_Mons" }, "timezone"],
			[{ intervalSeconds: 60, timezone: "Europe/Paris" }, "timezone"],
			[{ intervalSeconds: 60, cron: "0 7 * * *" }, "(body)"],
			[{}, "(body)"],
		];
		for (const [timing, field] of bad) {
			const res = await schedule(alice, id, { message: "echo: x", ...timing });
			expect(res.status, JSON.stringify(timing)).toBe(400);
			expect(res.res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
			expect(res.body.issues[0].path, JSON.stringify(timing)).toBe(field);
		}
		expect((await call(alice, `/v1/sessions/${id}/schedules`)).body.schedules).toEqual([]);
		const ok = await schedule(alice, id, { message: "echo: x", cron: "0 7 * * 1-5", timezone: "Asia/Tokyo" });
		expect(ok.status).toBe(201);
		// 07:00 in Tokyo is 22:00 UTC the day before.
		expect(new Date(ok.body.nextRunAt).getUTCHours()).toBe(22);
		const patched = await call(alice, `/v1/sessions/${id}/schedules/${ok.body.id}`, {
			method: "PATCH",
			json: { timezone: "Nowhere/Atall" },
		});
		expect(patched.status).toBe(400);
		expect((await call(alice, `/v1/sessions/${id}/schedules/${ok.body.id}`)).body.timezone).toBe("Asia/Tokyo");
		await call(alice, `/v1/sessions/${id}`, { method: "DELETE" });
	});

	it("a tick that finds the session busy is skipped or queued, as its schedule says", async () => {
		const wait = { name: "wait_here", description: "Waits for the test", parameters: { type: "object" } };
		const id = await session(alice, { clientTools: [wait] });
		// The run waits on the client tool call, so the session stays busy until it is answered.
		const run = await call(alice, `/v1/sessions/${id}/prompt`, {
			method: "POST",
			json: { message: "tool: wait_here {}" },
		});
		expect(run.status).toBe(202);
		const call0 = await until(async () => {
			const { body } = await call(alice, `/v1/sessions/${id}/tool-calls?status=pending`);
			return body.toolCalls[0];
		});
		const skip = await schedule(alice, id, { message: "echo: skipped", intervalSeconds: 1, whenBusy: "skip" });
		const skipped = await whenSchedule(alice, id, skip.body.id, (s) => s.runs.some((r: any) => r.status === "skipped"));
		expect(skipped.runs.find((r: any) => r.status === "skipped").detail).toMatch(/agent_busy/);
		await call(alice, `/v1/sessions/${id}/schedules/${skip.body.id}`, { method: "DELETE" });

		const queue = await schedule(alice, id, { message: "echo: queued", intervalSeconds: 3600, whenBusy: "queue" });
		// Brought forward: an interval of 1 s would queue a follow-up every second.
		await call(alice, `/v1/sessions/${id}/schedules/${queue.body.id}`, {
			method: "PATCH",
			json: { intervalSeconds: 1 },
		});
		const queued = await whenSchedule(alice, id, queue.body.id, (s) => s.runs.some((r: any) => r.status === "queued"));
		expect(queued.runs.find((r: any) => r.status === "queued").runId).toBe(run.body.runId);
		await call(alice, `/v1/sessions/${id}/schedules/${queue.body.id}`, { method: "PATCH", json: { enabled: false } });
		await call(alice, `/v1/sessions/${id}/tool-calls/${call0.id}`, { method: "POST", json: { output: "done" } });
		// The queued follow-up runs once the run it joined goes on.
		await until(async () => {
			const { body } = await call(alice, `/v1/sessions/${id}/messages`);
			return body.messages.some((m: any) => m.role === "assistant" && JSON.stringify(m.content).includes("queued"));
		});
		await call(alice, `/v1/sessions/${id}`, { method: "DELETE" });
	});

	it("a session past its budget records the tick as failed, and the schedule goes on", async () => {
		const id = await session(alice);
		const first = await call(alice, `/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			json: { message: "echo: one" },
		});
		expect(first.status).toBe(200);
		expect((await call(alice, `/v1/sessions/${id}/budget`, { method: "PUT", json: { maxTokens: 1 } })).status).toBe(
			200,
		);
		const made = await schedule(alice, id, { message: "echo: over", intervalSeconds: 1 });
		expect(made.status, JSON.stringify(made.body)).toBe(201);
		const sid = made.body.id;
		const failed = await whenSchedule(
			alice,
			id,
			sid,
			(s) => s.runs.filter((r: any) => r.status === "failed").length >= 2,
		);
		expect(failed.runs.find((r: any) => r.status === "failed").detail).toMatch(/budget_exhausted/);
		expect(failed.enabled).toBe(true);
		const told = await until(() => receiver.of("schedule.failed").find((r) => r.json.data.scheduleId === sid));
		expect(told.json.data).toMatchObject({
			sessionId: id,
			status: "failed",
			runId: null,
			error: "409 budget_exhausted",
		});
	});
});

describe("schedules of a principal whose keys are revoked", () => {
	it("stop running: each tick fails with principal_revoked", async () => {
		const id = await session(carol);
		const sid = (await schedule(carol, id, { message: "echo: carol", intervalSeconds: 1 })).body.id;
		await whenSchedule(carol, id, sid, (s) => s.runs.some((r: any) => r.status === "started"));
		revokeKeys(keysFile, "carol");
		// Read with the admin's token: carol has no key to read with any more.
		const failed = await until(async () => {
			const { body } = await gw.api(`/v1/sessions/${id}/schedules/${sid}`);
			return body.runs.find((r: any) => r.status === "failed");
		}, 60_000);
		expect(failed.detail).toMatch(/403 principal_revoked/);
	});
});

describe("schedules and hibernation", () => {
	let sleepy: TestGateway;
	beforeAll(async () => {
		// Sessions hibernate after half a second idle: every tick finds its session stopped.
		sleepy = await startTestGateway({
			...noPool,
			scheduleMinIntervalSeconds: 1,
			scheduleCheckMs: 200,
			idleTimeoutMs: 500,
		});
	});
	afterAll(async () => {
		await sleepy?.stop();
	});

	it("a tick wakes a hibernated session as a prompt would", async () => {
		const id = await sleepy.session();
		await until(async () => (await sleepy.api(`/v1/sessions/${id}`)).body.status === "stopped");
		const created = await sleepy.api(`/v1/sessions/${id}/schedules`, {
			method: "POST",
			json: { message: "echo: awake", intervalSeconds: 1 },
		});
		expect(created.status).toBe(201);
		await until(async () => {
			const { body } = await sleepy.api(`/v1/sessions/${id}/schedules/${created.body.id}`);
			return body.runs.some((r: { status: string }) => r.status === "started");
		}, 60_000);
		await until(async () => {
			const { body } = await sleepy.api(`/v1/sessions/${id}/messages`);
			return body.messages.some((m: any) => m.role === "assistant" && JSON.stringify(m.content).includes("awake"));
		}, 60_000);
	});
});
