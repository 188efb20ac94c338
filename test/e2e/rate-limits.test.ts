import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";

// Limits per principal: requests per window (hono-rate-limiter) and sessions with a live pi.
let dir: string;
let keysFile: string;
const key = { alice: "", bob: "" };
const open: TestGateway[] = [];
beforeAll(() => {
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-limits-"));
	keysFile = join(dir, "keys.json");
	key.alice = createKey(keysFile, "alice", ["sessions:read", "sessions:write"]).secret;
	key.bob = createKey(keysFile, "bob", ["sessions:read", "sessions:write"]).secret;
});
afterAll(async () => {
	for (const gw of open) await gw.stop();
	rmSync(dir, { recursive: true, force: true });
});
const as = (who: keyof typeof key) => ({ authorization: `Bearer ${key[who]}` });

describe("rate limits per principal", () => {
	it("past its requests per window a principal gets 429 with Retry-After; another principal does not", async () => {
		const gw = await startTestGateway({ keysFile, rateLimitRequests: 3, rateLimitWindowMs: 60_000 });
		open.push(gw);
		for (let i = 0; i < 3; i++) expect((await gw.api("/v1/sessions", { headers: as("alice") })).status).toBe(200);
		const limited = await gw.api("/v1/sessions", { headers: as("alice") });
		expect(limited.status).toBe(429);
		expect(limited.body.code).toBe("rate_limited");
		expect(limited.res.headers.get("content-type")).toContain("application/problem+json");
		const retryAfter = Number(limited.res.headers.get("retry-after"));
		expect(retryAfter).toBeGreaterThan(0);
		expect(retryAfter).toBeLessThanOrEqual(60);
		expect((await gw.api("/v1/sessions", { headers: as("bob") })).status).toBe(200);
		// Health checks carry no principal and are never limited.
		expect((await gw.fetch("/healthz", { headers: { authorization: "" } })).status).toBe(200);
	});

	it("a principal may own at most --max-live-sessions-per-principal live sessions", async () => {
		const gw = await startTestGateway({ keysFile, maxLiveSessionsPerPrincipal: 1 });
		open.push(gw);
		const first = await gw.api("/v1/sessions", { method: "POST", headers: as("alice"), json: {} });
		expect(first.status).toBe(201);
		// Her live session busy: a second create cannot hibernate it for the new one.
		const busy = await gw.api(`/v1/sessions/${first.body.id}/prompt`, {
			method: "POST",
			headers: as("alice"),
			json: { message: "bash: sleep 300" },
		});
		expect(busy.status).toBe(202);
		await until(
			async () => (await gw.api(`/v1/sessions/${first.body.id}`, { headers: as("alice") })).body.status === "running",
		);
		const second = await gw.api("/v1/sessions", { method: "POST", headers: as("alice"), json: {} });
		expect(second.status).toBe(429);
		expect(second.body.code).toBe("too_many_live_sessions");
		// Bob's count is his own.
		expect((await gw.api("/v1/sessions", { method: "POST", headers: as("bob"), json: {} })).status).toBe(201);
		expect((await gw.api(`/v1/sessions/${first.body.id}`, { method: "DELETE", headers: as("alice") })).status).toBe(
			204,
		);
		expect((await gw.api("/v1/sessions", { method: "POST", headers: as("alice"), json: {} })).status).toBe(201);
	});

	it("a principal may have at most --max-sessions-per-principal sessions of any status, stopped ones included (on by default)", async () => {
		const gw = await startTestGateway({ keysFile, workspaceRoot: undefined, maxSessionsPerPrincipal: 2 });
		open.push(gw);
		expect(gw.config.maxSessionsPerPrincipal).toBe(2);
		const ids: string[] = [];
		for (let i = 0; i < 2; i++) {
			const made = await gw.api("/v1/sessions", { method: "POST", headers: as("alice"), json: {} });
			expect(made.status).toBe(201);
			ids.push(made.body.id);
		}
		// One of hers crashes: a crashed session still takes a slot until it is deleted.
		const crash = await gw.api(`/v1/sessions/${ids[0]}/bash`, {
			method: "POST",
			headers: as("alice"),
			json: { command: "kill -9 $PPID" },
		});
		expect(crash.status).toBeGreaterThanOrEqual(200);
		const third = await gw.api("/v1/sessions", { method: "POST", headers: as("alice"), json: {} });
		expect([third.status, third.body.code]).toEqual([429, "too_many_sessions"]);
		expect(third.body.detail).toContain("--max-sessions-per-principal");
		// Bob's slots are his own, and the operator is held only to --max-sessions.
		expect((await gw.api("/v1/sessions", { method: "POST", headers: as("bob"), json: {} })).status).toBe(201);
		for (let i = 0; i < 3; i++) expect((await gw.api("/v1/sessions", { method: "POST", json: {} })).status).toBe(201);
		expect((await gw.api(`/v1/sessions/${ids[0]}`, { method: "DELETE", headers: as("alice") })).status).toBe(204);
		expect((await gw.api("/v1/sessions", { method: "POST", headers: as("alice"), json: {} })).status).toBe(201);
	});
});
