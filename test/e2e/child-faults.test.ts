import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alive, fixtures, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { collect } from "../helpers/sse.ts";

// Fault injection with a stub pi (test/fixtures/stub-pi.mjs): real pi cannot be made to crash,
// hang, print garbage or a 50 MB line, or close stdout on demand. A session named after a mode
// misbehaves that way; every test also checks that a healthy neighbour is untouched.
const stub = join(fixtures, "stub-pi.mjs");
let gw: TestGateway;
let healthy: string;

const view = async (id: string) => (await gw.api(`/v1/sessions/${id}`)).body;
const post = (id: string, path: string, json: unknown = {}) =>
	gw.api(`/v1/sessions/${id}${path}`, { method: "POST", json });

/** The neighbour still answers, and its prompt still runs to the end. */
async function expectHealthy() {
	const run = await post(healthy, "/prompt?wait=true", { message: "still here?" });
	expect(run.status).toBe(200);
	expect(run.body.text).toBe("stub: still here?");
	expect((await view(healthy)).status).toBe("idle");
}

beforeAll(async () => {
	gw = await startTestGateway({
		piCommand: [process.execPath, stub, "ok"],
		commandTimeoutMs: 1500,
		shutdownGraceMs: 200,
	});
	healthy = await gw.session({ name: "healthy" });
});
afterAll(() => gw?.stop());

describe("a pi child that misbehaves affects only its own session", () => {
	it("crash mid-stream (kill -9): 502 crashed, session_exit on its stream, pid gone", async () => {
		const id = await gw.session({ name: "crash" });
		const { pid } = await view(id);
		const events = await gw.fetch(`/v1/sessions/${id}/events`);
		const prompt = await post(id, "/prompt", { message: "boom" });
		expect(prompt.status).toBe(202);
		const frames = await collect(events, (f) => f.event === "session_exit");
		expect(frames.map((f) => f.event)).toEqual([
			"stream_open",
			"response",
			"session_status",
			"agent_start",
			"message_update",
			"session_status",
			"session_exit",
		]);
		expect(frames.at(-2)?.json).toEqual({ type: "session_status", sessionId: id, status: "crashed" });
		expect(frames.at(-1)?.json).toMatchObject({ code: null, signal: "SIGKILL", reason: "crashed", resumable: true });
		expect(await view(id)).toMatchObject({ status: "crashed", pid: null, exit: { signal: "SIGKILL" } });
		expect(alive(pid)).toBe(false);
		const after = await gw.api(`/v1/sessions/${id}/state`);
		expect(after.status).toBe(502);
		expect(after.body).toMatchObject({ code: "pi_crashed", detail: `Session ${id} is crashed` });
		await expectHealthy();
	});

	it("hang: the command gets 504 at its deadline, and abort still gets through meanwhile", async () => {
		const id = await gw.session({ name: "hang" });
		const started = Date.now();
		let answered = false;
		const prompt = post(id, "/prompt", { message: "never answered" }).then((res) => {
			answered = true;
			return res;
		});
		await until(async () => (await view(id)).queuedCommands === 1);
		const abort = await post(id, "/abort");
		expect(abort.status).toBe(204);
		// A state, not a stopwatch: the abort got through while the prompt still waited for pi.
		expect(answered).toBe(false);
		const timedOut = await prompt;
		expect(timedOut.status).toBe(504);
		expect(timedOut.body).toMatchObject({ code: "pi_timeout", detail: "pi did not answer prompt within 1.5s" });
		expect(Date.now() - started).toBeGreaterThanOrEqual(1500);
		// The queue moved on: the session is usable (reads still answer) and not stuck.
		expect((await gw.api(`/v1/sessions/${id}/state`)).status).toBe(200);
		expect(await view(id)).toMatchObject({ status: "idle", queuedCommands: 0 });
		await expectHealthy();
	});

	it("garbage on stdout is logged and skipped; the run completes", async () => {
		const id = await gw.session({ name: "garbage" });
		const run = await post(id, "/prompt?wait=true", { message: "hi" });
		expect(run.status).toBe(200);
		expect(run.body.text).toBe("stub: hi");
		const events = await gw.fetch(`/v1/sessions/${id}/events?after=0`);
		const types = (await collect(events, (f) => f.event === "agent_settled")).map((f) => f.event);
		expect(types).toEqual([
			"stream_open",
			"session_status",
			"response",
			"session_status",
			"agent_start",
			"message_update",
			"message_end",
			"agent_end",
			"agent_settled",
		]);
		await expectHealthy();
	});

	it("records whose type or body hold SSE line breaks cannot forge frames (read as a browser would)", async () => {
		const id = await gw.session({ name: "forge" });
		const run = await post(id, "/prompt?wait=true", { message: "hi" });
		expect(run.status).toBe(200);
		const res = await fetch(`${gw.url}/v1/sessions/${id}/events?after=0`, {
			headers: { authorization: `Bearer ${gw.config.token}` },
		});
		// The client's parser follows the SSE spec (CR, LF and CRLF all end a line), as a browser reads.
		const frames = await collect(res, (f) => f.event === "agent_settled");
		// The records with a line break in their type are skipped; the raw-CR line stays one turn_start frame.
		expect(frames.map((f) => f.event)).toEqual([
			"stream_open",
			"session_status",
			"turn_start",
			"response",
			"session_status",
			"agent_start",
			"message_update",
			"message_end",
			"agent_end",
			"agent_settled",
		]);
		expect(frames.at(-1)?.data).toBe('{"type":"agent_settled"}');
		const turn = frames.find((f) => f.event === "turn_start");
		expect(turn?.id).toMatch(/^\d+$/);
		expect(turn?.data).toBe('{"type":"turn_start","n":3,"a":"\nevent: agent_settled\ndata: {\\"forged\\":3}\n"}');
		await expectHealthy();
	});

	it("a 50 MB line is delivered whole under the default cap", async () => {
		// This gateway's 1.5 s deadline is for the hang test; 50 MB through a pipe can take longer on 2 busy cores.
		const big = await startTestGateway({ piCommand: [process.execPath, stub, "huge"] });
		try {
			const id = await big.session();
			const res = await big.api(`/v1/sessions/${id}/messages`);
			expect(res.status).toBe(200);
			expect(res.body.messages[0].content[0].text.length).toBe(50 * 1024 * 1024);
			expect((await big.api(`/v1/sessions/${id}/state`)).status).toBe(200);
		} finally {
			await big.stop();
		}
	});

	it("a line over maxLineChars is refused cleanly: 502 for its command, a line_dropped event, the session goes on", async () => {
		const small = await startTestGateway({ piCommand: [process.execPath, stub, "huge"], maxLineChars: 1024 * 1024 });
		try {
			const id = await small.session();
			const res = await small.api(`/v1/sessions/${id}/messages`);
			expect(res.status).toBe(502);
			expect(res.body.code).toBe("pi_answer_too_large");
			const detail =
				/^pi's answer to get_messages was (\d+) characters, over the gateway's limit of 1048576 \(maxLineChars\)$/;
			expect(res.body.detail).toMatch(detail);
			// The whole line: 50 MiB of text plus its JSON envelope.
			const chars = Number(detail.exec(res.body.detail)?.[1]);
			expect(chars - 50 * 1024 * 1024).toBeGreaterThan(100);
			expect(chars - 50 * 1024 * 1024).toBeLessThan(200);
			const frames = await collect(
				await small.fetch(`/v1/sessions/${id}/events?after=0`),
				(f) => f.event === "line_dropped",
			);
			expect(frames.at(-1)?.json).toEqual({
				type: "line_dropped",
				sessionId: id,
				chars,
				reason: "line exceeds maxLineChars",
			});
			expect((await small.api(`/v1/sessions/${id}/state`)).status).toBe(200);
			expect((await small.api(`/v1/sessions/${id}`)).body.status).toBe("idle");
		} finally {
			await small.stop();
		}
	});

	it.each([
		["README's layout (sandboxed)", "auto"],
		["--sandbox off", "off"],
	] as const)(
		"stdout closed early, %s: the child is killed, the session crashed, the neighbour untouched",
		async (_, sandbox) => {
			// Sandboxed, bwrap's init held a copy of pi's stdout until pi's pipes moved to descriptors it
			// closes (sandbox.ts): a pi that closed it and lived on was caught only by the command deadline.
			const plain = await startTestGateway({ piCommand: [process.execPath, stub, "ok"], sandbox });
			try {
				if (sandbox === "auto") expect(plain.config.sandbox).toBe("on");
				const id = await plain.session({ name: "eof" });
				const { pid } = (await plain.api(`/v1/sessions/${id}`)).body;
				const prompt = await plain.api(`/v1/sessions/${id}/prompt`, { method: "POST", json: { message: "close it" } });
				expect(prompt.status).toBe(202);
				await until(async () => (await plain.api(`/v1/sessions/${id}`)).body.status === "crashed", 5000);
				expect((await plain.api(`/v1/sessions/${id}`)).body.exit).toMatchObject({ code: null, signal: "SIGKILL" });
				expect(alive(pid)).toBe(false);
			} finally {
				await plain.stop();
			}
			await expectHealthy();
		},
	);

	it("a child that ignores stdin EOF and SIGTERM is SIGKILLed after two grace periods", async () => {
		const id = await gw.session({ name: "stubborn" });
		const { pid } = await view(id);
		const started = Date.now();
		expect((await gw.api(`/v1/sessions/${id}`, { method: "DELETE" })).status).toBe(204);
		// Two grace periods (200 ms each) pass first; a timer never fires early, so the lower bound holds.
		expect(Date.now() - started).toBeGreaterThanOrEqual(400);
		expect(alive(pid)).toBe(false);
		await expectHealthy();
	});

	it("a pi command that cannot be spawned is a 502 and leaves no session behind", async () => {
		const broken = await startTestGateway({ piCommand: ["/nonexistent/pi"] });
		try {
			const res = await broken.api("/v1/sessions", { method: "POST", json: {} });
			expect(res.status).toBe(502);
			expect(res.body).toMatchObject({
				code: "pi_spawn_failed",
				detail: "Could not start pi: spawn /nonexistent/pi ENOENT",
			});
			expect((await broken.api("/v1/sessions")).body.sessions).toEqual([]);
		} finally {
			await broken.stop();
		}
	});
});
