import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";

// Two ordinary principals at once, README's layout, real pi. Bob ran `sleep 300` in every live slot
// and alice's create got 429; with --max-sessions 12 he filled every session slot. Now each
// principal has a share of both caps by default (a quarter), a wake-up counts in it as a create
// does, and past the whole cap the principal holding the most gives up an idle session first.
let dir: string;
let keysFile: string;
let alice: string;
let bob: string;
let carol: string;
beforeAll(() => {
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-fair-live-"));
	keysFile = join(dir, "keys.json");
	alice = createKey(keysFile, "alice", ["sessions:read", "sessions:write"]).secret;
	bob = createKey(keysFile, "bob", ["sessions:read", "sessions:write"]).secret;
	carol = createKey(keysFile, "carol", ["sessions:read", "sessions:write"]).secret;
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const as = (gw: TestGateway, secret: string) => ({
	create: () => gw.api("/v1/sessions", { method: "POST", json: {}, headers: { authorization: `Bearer ${secret}` } }),
	prompt: (id: string, message: string) =>
		gw.api(`/v1/sessions/${id}/prompt`, {
			method: "POST",
			json: { message },
			headers: { authorization: `Bearer ${secret}` },
		}),
	get: (id: string) => gw.api(`/v1/sessions/${id}`, { headers: { authorization: `Bearer ${secret}` } }),
});

describe("live slots are shared fairly", () => {
	let gw: TestGateway;
	beforeAll(async () => {
		// 4 live slots: each principal's default share is one.
		gw = await startTestGateway({ keysFile, maxLiveSessions: 4, warmPool: 0 });
	});
	afterAll(async () => {
		await gw?.stop();
	});

	it("bob's busy sessions take his own share only: his next create and wake-up are 429, alice's create is 201", async () => {
		const info = await gw.api("/v1/info");
		expect(info.body.limits.maxLiveSessions).toBe(4);
		const b = as(gw, bob);
		const first = await b.create();
		expect(first.status).toBe(201);
		// His first session, idle: his second create hibernates it (his own share), not anyone else's.
		const second = await b.create();
		expect(second.status).toBe(201);
		await until(async () => (await b.get(first.body.id)).body.status === "stopped");
		expect((await b.prompt(second.body.id, "bash: sleep 300")).status).toBe(202);
		await until(async () => (await b.get(second.body.id)).body.status === "running");
		const third = await b.create();
		expect(third.status).toBe(429);
		expect(third.body).toMatchObject({
			code: "too_many_live_sessions",
			detail: expect.stringMatching(/^bob already has 1 sessions with a live pi process \(at most 1/),
		});
		// Waking his hibernated session is a start in his share too.
		const wake = await b.prompt(first.body.id, "bash: sleep 300");
		expect(wake.status).toBe(429);
		expect(wake.body.code).toBe("too_many_live_sessions");
		const hers = await as(gw, alice).create();
		expect(hers.status).toBe(201);
		await gw.api(`/v1/sessions/${second.body.id}/abort`, { method: "POST", json: {} });
	});
});

describe("past the whole cap, the principal holding the most gives up an idle session", () => {
	let gw: TestGateway;
	beforeAll(async () => {
		gw = await startTestGateway({ keysFile, maxLiveSessions: 4, maxLiveSessionsPerPrincipal: 3, warmPool: 0 });
	});
	afterAll(async () => {
		await gw?.stop();
	});

	it("carol's create hibernates one of bob's three, not alice's older one", async () => {
		const hers = await as(gw, alice).create();
		expect(hers.status).toBe(201);
		const his: string[] = [];
		for (let i = 0; i < 3; i++) {
			const created = await as(gw, bob).create();
			expect(created.status).toBe(201);
			his.push(created.body.id);
		}
		const theirs = await as(gw, carol).create();
		expect(theirs.status).toBe(201);
		expect((await as(gw, alice).get(hers.body.id)).body.status).toBe("idle");
		const statuses = await Promise.all(his.map(async (id) => (await as(gw, bob).get(id)).body.status));
		expect(statuses.filter((s) => s === "stopped")).toHaveLength(1);
	});
});

describe("session slots are shared fairly", () => {
	let gw: TestGateway;
	beforeAll(async () => {
		gw = await startTestGateway({ keysFile, maxSessions: 12, warmPool: 0 });
	});
	afterAll(async () => {
		await gw?.stop();
	});

	it("with --max-sessions 12 bob gets a quarter, and alice still creates", async () => {
		const limits = await gw.api("/v1/info");
		expect(limits.body.limits.maxSessions).toBe(12);
		for (let i = 0; i < 3; i++) expect((await as(gw, bob).create()).status).toBe(201);
		const fourth = await as(gw, bob).create();
		expect(fourth.status).toBe(429);
		expect(fourth.body).toMatchObject({
			code: "too_many_sessions",
			detail: expect.stringMatching(/bob already has 3 sessions.*at most 3, --max-sessions-per-principal/),
		});
		expect((await as(gw, alice).create()).status).toBe(201);
	});
});
