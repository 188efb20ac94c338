import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alive, until } from "../helpers/gateway.ts";
import { type GatewayProcess, killAll, launchGateway } from "../helpers/gateway-process.ts";
import { type Frame, readFrames } from "../helpers/sse.ts";

// Issue 30, item 4: SIGTERM drains a single gateway. Readiness goes false at once, new runs (and
// new sessions) are refused with 503 and Retry-After, the runs in progress get --drain-timeout-ms
// (30 s by default) to settle, then the sessions stop. A second signal stops at once.

const token = "drain-test-token-0123456789";
let root: string;
const gateways: GatewayProcess[] = [];

beforeAll(() => {
	root = mkdtempSync(join(tmpdir(), "pi-gateway-drain-"));
});
afterAll(() => {
	killAll(gateways);
	rmSync(root, { recursive: true, force: true });
});

async function start(name: string, extra: string[] = []): Promise<GatewayProcess> {
	const gw = await launchGateway({ root: join(root, name), port: 0, token, extra });
	gateways.push(gw);
	return gw;
}

/** A session's events as they come, with when each arrived. */
function follow(gw: GatewayProcess, id: string) {
	const seen: { frame: Frame; at: number }[] = [];
	const ended = (async () => {
		for await (const frame of readFrames(await gw.fetch(`/v1/sessions/${id}/events`)))
			seen.push({ frame, at: Date.now() });
	})();
	return { seen, ended };
}

const isDelta = (f: Frame) => f.json?.type === "message_update" && f.json.assistantMessageEvent?.type === "text_delta";

describe("SIGTERM of a single gateway", () => {
	it("drains: /readyz 503 at once, new runs and sessions 503 with Retry-After, the run in progress completes, then exit 0", async () => {
		const gw = await start("drain");
		const busy = (await gw.api("/v1/sessions", { method: "POST", json: {} })).body.id as string;
		const idle = (await gw.api("/v1/sessions", { method: "POST", json: {} })).body.id as string;
		const stream = follow(gw, busy);
		await until(() => stream.seen.length > 0);
		expect(
			(await gw.api(`/v1/sessions/${busy}/prompt`, { method: "POST", json: { message: "slow: 30" } })).status,
		).toBe(202);
		await until(() => stream.seen.filter((s) => isDelta(s.frame)).length >= 3);
		const termAt = Date.now();
		gw.child.kill("SIGTERM");
		// The same signal delivered twice at once (npm passes on the Ctrl-C the gateway also got) counts once.
		await until(() => gw.stderr().includes("SIGTERM, stopping every session"), 2000);
		gw.child.kill("SIGTERM");
		// Readiness goes false at once; the server still answers, so a refusal can say when to retry.
		const ready = await until(async () => {
			const res = await gw.api("/readyz");
			return res.status === 503 && res;
		}, 2000);
		expect(Date.now() - termAt).toBeLessThan(1500);
		expect(ready.body.code).toBe("shutting_down");
		const prompt = await gw.api(`/v1/sessions/${idle}/prompt`, { method: "POST", json: { message: "echo: new" } });
		expect(prompt.status).toBe(503);
		expect(prompt.body.code).toBe("shutting_down");
		expect(Number(prompt.res.headers.get("retry-after"))).toBeGreaterThan(0);
		const created = await gw.api("/v1/sessions", { method: "POST", json: {} });
		expect(created.status).toBe(503);
		expect(Number(created.res.headers.get("retry-after"))).toBeGreaterThan(0);
		const streamed = await gw.fetch(`/v1/sessions/${idle}/prompt/stream`, {
			method: "POST",
			headers: { "content-type": "application/json", accept: "text/event-stream" },
			body: JSON.stringify({ message: "echo: new" }),
		});
		expect(streamed.status).toBe(503);
		expect(Number(streamed.headers.get("retry-after"))).toBeGreaterThan(0);
		await streamed.body?.cancel();

		// The run in progress settles, whole, then the session stops and the process exits 0.
		await stream.ended;
		const frames = stream.seen.map((s) => s.frame);
		const settled = frames.find((f) => f.json?.type === "agent_settled");
		expect(settled?.json).toEqual({ type: "agent_settled", aborted: false });
		expect(frames.filter(isDelta)).toHaveLength(30);
		expect(frames.at(-1)?.json).toMatchObject({ type: "session_exit", reason: "shutdown", resumable: true });
		const { code, signal } = await gw.exited;
		expect([code, signal]).toEqual([0, null]);
		expect(Date.now() - termAt).toBeLessThan(15_000);
		expect(gw.stderr()).toMatch(/SIGTERM, stopping every session once runs in progress settle \(at most 30000 ms/);
	}, 60_000);

	it("gives a run at most --drain-timeout-ms, then stops its session", async () => {
		const gw = await start("timeout", ["--drain-timeout-ms=700"]);
		const id = (await gw.api("/v1/sessions", { method: "POST", json: {} })).body.id as string;
		const stream = follow(gw, id);
		await until(() => stream.seen.length > 0);
		await gw.api(`/v1/sessions/${id}/prompt`, { method: "POST", json: { message: "slow: 600" } });
		await until(() => stream.seen.filter((s) => isDelta(s.frame)).length >= 2);
		const termAt = Date.now();
		gw.child.kill("SIGTERM");
		await stream.ended;
		const after = stream.seen.filter((s) => s.at > termAt && isDelta(s.frame));
		// The run went on for the grace (a delta every 100 ms), and was cut after it.
		expect(after.length).toBeGreaterThanOrEqual(4);
		expect(stream.seen.some((s) => s.frame.json?.type === "agent_settled")).toBe(false);
		expect(stream.seen.at(-1)?.frame.json).toMatchObject({ type: "session_exit", reason: "shutdown" });
		expect((await gw.exited).code).toBe(0);
		expect(Date.now() - termAt).toBeLessThan(6000);
	}, 60_000);

	it("a second signal during the drain stops at once", async () => {
		const gw = await start("twice");
		const id = (await gw.api("/v1/sessions", { method: "POST", json: {} })).body.id as string;
		await gw.api(`/v1/sessions/${id}/prompt`, { method: "POST", json: { message: "slow: 600" } });
		await until(async () => (await gw.api(`/v1/sessions/${id}`)).body.status === "running");
		const { pid } = (await gw.api(`/v1/sessions/${id}`)).body;
		gw.child.kill("SIGTERM");
		await until(async () => (await gw.api("/readyz")).status === 503, 2000);
		// Draining: the run goes on.
		await new Promise((r) => setTimeout(r, 600));
		expect(gw.child.exitCode).toBeNull();
		const secondAt = Date.now();
		gw.child.kill("SIGTERM");
		const { code } = await gw.exited;
		expect(code).toBe(1);
		expect(Date.now() - secondAt).toBeLessThan(2000);
		expect(gw.stderr()).toContain("second SIGTERM, killing every pi process now");
		await until(() => !alive(pid), 5000);
	}, 60_000);
});
