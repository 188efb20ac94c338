import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fixtures, runEnded, startTestGateway, stdinRecord, type TestGateway, until } from "../helpers/gateway.ts";
import { collect } from "../helpers/sse.ts";

// Each limit answered with its own problem+json. A stub pi that records its stdin proves that
// refused input never reached it; limits themselves are the gateway's, so the stub is enough.
const stub = join(fixtures, "stub-pi.mjs");
let gw: TestGateway;
let id: string;
const record = stdinRecord("limits");
const sent = record.commands;

beforeAll(async () => {
	gw = await startTestGateway({
		piCommand: [process.execPath, stub, "ok", `record=${record.path}`],
		// The recorder runs where pi runs: in the sandbox, which must let it write its record.
		sandboxWritable: [record.path],
		maxSessions: 3,
		maxLiveSessions: 2,
		maxQueued: 2,
		maxSubscribers: 2,
		maxBodyBytes: 64 * 1024,
		maxImageBytes: 1000,
		commandTimeoutMs: 500,
	});
	id = await gw.session({ persist: false });
});
afterAll(() => gw?.stop());

const problem = (res: { status: number; body: any; res: Response }, status: number, code: string) => {
	expect(res.status).toBe(status);
	expect(res.res.headers.get("content-type")).toBe("application/problem+json");
	expect(res.body).toMatchObject({ status, code, type: `urn:pi-gateway:problem:${code}` });
};

describe("limits", () => {
	it("413 for a body over maxBodyBytes", async () => {
		const before = sent().length;
		const res = await gw.api(`/v1/sessions/${id}/prompt`, { method: "POST", json: { message: "x".repeat(70_000) } });
		problem(res, 413, "body_too_large");
		expect(res.body.detail).toBe("Request bodies are limited to 65536 bytes");
		expect(sent().length).toBe(before);
	});

	it("413 for an image over maxImageBytes, on the typed route and on /rpc; a small one passes", async () => {
		const before = sent().length;
		const image = (bytes: number) => ({
			type: "image",
			mimeType: "image/png",
			data: Buffer.alloc(bytes).toString("base64"),
		});
		const typed = await gw.api(`/v1/sessions/${id}/prompt`, {
			method: "POST",
			json: { message: "look", images: [image(10), image(1001)] },
		});
		problem(typed, 413, "image_too_large");
		expect(typed.body.detail).toBe("Image 1 is 1001 bytes; images are limited to 1000 bytes");
		const raw = await gw.api(`/v1/sessions/${id}/rpc`, {
			method: "POST",
			json: { type: "steer", message: "look", images: [image(4000)] },
		});
		problem(raw, 413, "image_too_large");
		expect(sent().length).toBe(before);
		const ok = await gw.api(`/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			json: { message: "look", images: [image(1000)] },
		});
		expect(ok.status).toBe(200);
		expect(sent().at(-1)).toMatchObject({ type: "prompt", message: "look", images: [image(1000)] });
	});

	it("429 when a session already has maxQueued commands", async () => {
		const hang = await gw.session({ name: "hang", persist: false });
		const first = gw.api(`/v1/sessions/${hang}/bash`, { method: "POST", json: { command: "true" } });
		const second = gw.api(`/v1/sessions/${hang}/bash`, { method: "POST", json: { command: "true" } });
		await until(async () => (await gw.api(`/v1/sessions/${hang}`)).body.queuedCommands === 2);
		const third = await gw.api(`/v1/sessions/${hang}/bash`, { method: "POST", json: { command: "true" } });
		problem(third, 429, "queue_full");
		expect(third.body.detail).toBe(`Session ${hang} already has 2 commands queued`);
		expect((await first).status).toBe(504);
		expect((await second).status).toBe(504);
		expect((await gw.api(`/v1/sessions/${hang}`, { method: "DELETE" })).status).toBe(204);
	});

	it("429 past maxSubscribers SSE streams on one session", async () => {
		const controller = new AbortController();
		const open = () => gw.fetch(`/v1/sessions/${id}/events`, { signal: controller.signal });
		const streams = [await open(), await open()];
		expect(streams.map((s) => s.status)).toEqual([200, 200]);
		const third = await gw.api(`/v1/sessions/${id}/events`);
		problem(third, 429, "too_many_subscribers");
		controller.abort();
		// The slots free up as the server notices the disconnects.
		await until(async () => {
			const res = await gw.fetch(`/v1/sessions/${id}/events`);
			await res.body?.cancel();
			return res.status === 200;
		});
	});

	it("429 past maxLiveSessions when no session can hibernate, and past maxSessions", async () => {
		// Two live ephemeral sessions (ephemeral ones cannot hibernate): no room for a third process.
		const second = await gw.session({ persist: false });
		const noRoom = await gw.api("/v1/sessions", { method: "POST", json: { persist: false } });
		problem(noRoom, 429, "too_many_live_sessions");
		expect(noRoom.body.detail).toBe("All 2 pi processes are busy and none is idle enough to hibernate");
		// A persistent session makes room by hibernating the least recently used persistent one.
		expect((await gw.api(`/v1/sessions/${second}`, { method: "DELETE" })).status).toBe(204);
		const older = await gw.session();
		const newer = await gw.session();
		expect((await gw.api(`/v1/sessions/${older}`)).body).toMatchObject({ status: "stopped", pid: null });
		expect((await gw.api(`/v1/sessions/${newer}`)).body.status).toBe("idle");
		const full = await gw.api("/v1/sessions", { method: "POST", json: {} });
		problem(full, 429, "too_many_sessions");
		expect(full.body.detail).toBe("At most 3 sessions (stopped ones count)");
		for (const s of [older, newer]) await gw.api(`/v1/sessions/${s}`, { method: "DELETE" });
	});
});

describe("idle lifetime", () => {
	let idle: TestGateway;
	beforeAll(async () => {
		idle = await startTestGateway({
			piCommand: [process.execPath, stub, "ok"],
			idleTimeoutMs: 400,
			// Long enough that a loaded machine opens the session's stream before it is reaped (at 400 ms a
			// clean-clone run's stream found it gone already: 410, no frames).
			ephemeralIdleTimeoutMs: 1500,
		});
	});
	afterAll(() => idle?.stop());

	it("an idle ephemeral session is reaped: session_exit reason idle, then 410 Gone", async () => {
		const eph = await idle.session({ persist: false });
		const { pid } = (await idle.api(`/v1/sessions/${eph}`)).body;
		const frames = await collect(await idle.fetch(`/v1/sessions/${eph}/events`), (f) => f.event === "session_exit");
		expect(frames.at(-1)?.json).toMatchObject({ type: "session_exit", reason: "idle", resumable: false, code: 0 });
		const gone = await until(async () => {
			const res = await idle.api(`/v1/sessions/${eph}`);
			return res.status === 410 && res;
		});
		expect(gone.body.code).toBe("session_gone");
		expect(gone.body.detail).toMatch(
			new RegExp(
				`^Session ${eph} was ephemeral \\(persist:false\\) and was stopped at .* after 1500 ms without activity$`,
			),
		);
		expect(() => process.kill(pid, 0)).toThrow();
	});

	it("an idle persistent session hibernates and its next command resumes it transparently", async () => {
		const keep = await idle.session();
		const run = await idle.api(`/v1/sessions/${keep}/prompt?wait=true`, {
			method: "POST",
			json: { message: "remember" },
		});
		expect(run.body.text).toBe("stub: remember");
		await runEnded(idle, keep);
		const before = (await idle.api(`/v1/sessions/${keep}`)).body;
		const messages = (await idle.api(`/v1/sessions/${keep}/messages`)).body;
		await until(async () => (await idle.api(`/v1/sessions/${keep}`)).body.status === "stopped");
		const asleep = (await idle.api(`/v1/sessions/${keep}`)).body;
		expect(asleep).toMatchObject({ pid: null, resumable: true, piSessionFile: before.piSessionFile });
		expect(() => process.kill(before.pid, 0)).toThrow();
		const after = await idle.api(`/v1/sessions/${keep}/messages`);
		expect(after.status).toBe(200);
		expect(after.body).toEqual(messages);
		const woken = (await idle.api(`/v1/sessions/${keep}`)).body;
		expect(woken.status).toBe("idle");
		expect(woken.pid).not.toBe(before.pid);
		// One log across both processes: the sequence goes on, so a client's Last-Event-ID stays
		// meaningful. A stream ends at session_exit; reconnecting after it picks up the resume.
		const seq = before.lastEventId;
		const events = (after: number) => idle.fetch(`/v1/sessions/${keep}/events?after=${after}`);
		const asFrames = (frames: { id?: string; event?: string; json: any }[]) =>
			frames.slice(1).map((f) => [f.id, f.event, f.json.status ?? f.json.reason]);
		expect(asFrames(await collect(await events(seq)))).toEqual([
			[String(seq + 1), "session_status", "stopped"],
			[String(seq + 2), "session_exit", "idle"],
		]);
		const resumed = await collect(
			await events(seq + 2),
			(f) => f.event === "session_status" && f.json.status === "idle",
		);
		expect(asFrames(resumed)).toEqual([
			[String(seq + 3), "session_status", "starting"],
			[String(seq + 4), "session_status", "idle"],
		]);
	});
});
