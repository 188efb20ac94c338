import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fixtures, noPool, runEnded, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { frameReader } from "../helpers/raw-sse.ts";
import { collect, type Frame } from "../helpers/sse.ts";

// Streamed and waited prompt/steer/follow-up, and streamed bash, with real pi and the demo model.
let gw: TestGateway;
let id: string;

beforeAll(async () => {
	gw = await startTestGateway({ ...noPool, extensions: { stream: join(fixtures, "extensions/stream-ext.ts") } });
	id = await gw.session({ name: "runs", persist: false, extensions: ["stream"] });
});
afterAll(() => gw?.stop());

const post = (path: string, json: unknown, headers: Record<string, string> = {}, sid = id) =>
	gw.fetch(`/v1/sessions/${sid}${path}`, {
		method: "POST",
		headers: { "content-type": "application/json", ...headers },
		body: JSON.stringify(json),
	});
const bodyOf = async (res: Response): Promise<any> => res.json();
const streamed = (path: string, json: unknown, sid = id) => post(path, json, { accept: "text/event-stream" }, sid);
const events = (frames: Frame[]) => frames.map((f) => f.event);
const deltas = (frames: Frame[]) =>
	frames
		.filter((f) => f.event === "message_update" && f.json.assistantMessageEvent.type === "text_delta")
		.map((f) => f.json.assistantMessageEvent.delta as string)
		.join("");
const isDelta = (f: Frame) => f.json?.assistantMessageEvent?.type === "text_delta";
const idle = () => until(async () => (await gw.api(`/v1/sessions/${id}`)).body.status === "idle");
/** stream_open has no id; every frame after it has the next one. */
const contiguous = (frames: Frame[]) => {
	expect([frames[0]?.event, frames[0]?.id]).toEqual(["stream_open", undefined]);
	const after = Number(frames[0]?.json.after);
	expect(frames.slice(1).map((f) => Number(f.id))).toEqual(frames.slice(1).map((_, i) => after + 1 + i));
};

describe("Accept: text/event-stream on prompt", () => {
	it("streams the command's response, then the run through agent_settled, then ends", async () => {
		const start = gw.registry.get(id).events.lastSeq;
		const res = await streamed("/prompt", { message: "hi" });
		expect(res.status).toBe(200);
		expect(res.headers.get("content-type")).toBe("text/event-stream");
		const frames = await collect(res); // ends on its own
		const open = frames[0]?.json;
		expect(open).toEqual({ type: "stream_open", sessionId: id, runId: open.runId, after: start });
		contiguous(frames);
		expect(frames[1]?.json).toEqual({
			id: open.runId,
			type: "response",
			command: "prompt",
			success: true,
			data: { disposition: "started" },
		});
		expect(events(frames)).toContain("agent_start");
		expect(frames.at(-1)?.json).toEqual({ type: "agent_settled", aborted: false });
		expect(deltas(frames)).toBe("Hello from the pi-gateway demo model. You said: hi");
		expect(gw.registry.get(id).sseSubscribers).toBe(0);
	});

	it("a refused prompt is an HTTP error, not a stream; abort mid-stream ends with agent_settled aborted", async () => {
		const reader = frameReader(await streamed("/prompt", { message: "slow: 50" }));
		let seen = 0;
		await reader.until((f) => isDelta(f) && ++seen === 2);
		const refused = await streamed("/prompt", { message: "not now" });
		expect(refused.status).toBe(409);
		expect(refused.headers.get("content-type")).toContain("application/problem+json");
		expect((await bodyOf(refused)).code).toBe("agent_busy");
		expect((await post("/abort", {})).status).toBe(204);
		const frames = await reader.rest();
		expect(frames.at(-1)?.json).toEqual({ type: "agent_settled", aborted: true });
		expect(deltas(frames).startsWith("1 2")).toBe(true);
		expect(deltas(frames).length).toBeLessThan("1 2 3 4 5 6 7 8 9 10".length);
	});

	it("a steer during the run shows in the run's stream; a streamed steer ends with the same run", async () => {
		const reader = frameReader(await streamed("/prompt", { message: "slow: 5" }));
		await reader.until(isDelta);
		const steer = await streamed("/steer", { message: "change course" });
		expect(steer.status).toBe(200);
		const [run, steered] = await Promise.all([reader.rest(), collect(steer)]);
		const steerId = steered[0]?.json.runId;
		const response = (frames: Frame[]) => frames.find((f) => f.event === "response" && f.json.id === steerId);
		expect(response(steered)?.json).toMatchObject({ command: "steer", data: { disposition: "queued" } });
		expect(response(run)).toEqual(response(steered));
		// The steered stream is the tail of the run's stream, from just before the steer.
		expect(run.slice(-(steered.length - 1))).toEqual(steered.slice(1));
		const users = run.filter((f) => f.event === "message_end" && f.json.message.role === "user");
		expect(users.map((f) => f.json.message.content[0].text)).toEqual(["slow: 5", "change course"]);
		const replies = run.filter((f) => f.event === "message_end" && f.json.message.role === "assistant");
		expect(replies.at(-1)?.json.message.content[0].text).toBe(
			"Hello from the pi-gateway demo model. You said: change course",
		);
		// Both streams end with the one agent_settled of the run.
		expect(run.at(-1)?.event).toBe("agent_settled");
		expect(steered.at(-1)).toEqual(run.at(-1));
	});

	it("a handled prompt (an extension command) streams what it caused and ends with pi's response", async () => {
		const frames = await collect(await streamed("/prompt", { message: "/hello world" }));
		expect(events(frames)).toEqual(["stream_open", "extension_ui_request", "response"]);
		expect(frames[1]?.json).toMatchObject({ method: "notify", message: "hello world" });
		expect(frames[2]?.json).toMatchObject({ command: "prompt", success: true, data: { disposition: "handled" } });
	});

	it("a dialog before pi's response starts the stream; answering it lets the stream go on", async () => {
		// The earlier run's run_changes (after its snapshot, late on a busy machine) is not this stream's.
		await runEnded(gw, id);
		const res = await streamed("/prompt", { message: "/ask ship it?" });
		expect(res.status).toBe(200);
		const reader = frameReader(res);
		const approval = (await reader.until((f) => f.event === "approval_requested")).json.approval;
		expect(approval).toMatchObject({ method: "confirm", title: "Proceed?", message: "ship it?", status: "pending" });
		const answered = await gw.api(`/v1/sessions/${id}/approvals/${approval.id}`, {
			method: "POST",
			json: { confirmed: true },
		});
		expect(answered.status).toBe(200);
		const frames = await reader.rest();
		expect(events(frames)).toEqual([
			"stream_open",
			"extension_ui_request",
			"approval_requested",
			"session_status",
			"approval_resolved",
			"session_status",
			"extension_ui_request",
			"response",
		]);
		expect(frames[6]?.json).toMatchObject({ method: "notify", message: "confirmed" });
		expect(frames.at(-1)?.json).toMatchObject({ command: "prompt", data: { disposition: "handled" } });
	});

	it("a dialog in the middle of a run appears in the run's stream and the run goes on once it is answered", async () => {
		const reader = frameReader(await streamed("/prompt", { message: "bash: echo guarded-ok" }));
		const approval = (await reader.until((f) => f.event === "approval_requested")).json.approval;
		expect(approval).toMatchObject({ title: "Run it?", message: "echo guarded-ok" });
		await gw.api(`/v1/sessions/${id}/approvals/${approval.id}`, { method: "POST", json: { confirmed: true } });
		const frames = await reader.rest();
		contiguous(frames);
		expect(events(frames)).toContain("tool_execution_end");
		expect(frames.at(-1)?.json).toEqual({ type: "agent_settled", aborted: false });
		const last = frames.findLast((f) => f.event === "message_end");
		expect(last?.json.message.content[0].text).toBe("The command finished. Output:\nguarded-ok");
	});

	it("two concurrent runs in two sessions do not mix", async () => {
		const other = await gw.session({ persist: false });
		const [a, b] = await Promise.all([
			streamed("/prompt", { message: "count: 400" }),
			streamed("/prompt", { message: "echo: only in the other session" }, other),
		]);
		const [fa, fb] = await Promise.all([collect(a), collect(b)]);
		expect(deltas(fa)).toBe(Array.from({ length: 400 }, (_, i) => i + 1).join(" "));
		expect(deltas(fb)).toBe("only in the other session");
		contiguous(fa);
		contiguous(fb);
		for (const [frames, sid] of [
			[fa, id],
			[fb, other],
		] as const) {
			const named = frames.filter((f) => f.json?.sessionId !== undefined).map((f) => f.json.sessionId);
			expect(new Set(named)).toEqual(new Set([sid]));
		}
		await gw.api(`/v1/sessions/${other}`, { method: "DELETE" });
	});
});

describe("wait mode", () => {
	it("Prefer: wait answers 200 after agent_settled with the new messages, text, stop reason and usage", async () => {
		const res = await post("/prompt", { message: "waited" }, { prefer: "wait" });
		expect(res.status).toBe(200);
		expect(res.headers.get("preference-applied")).toBe("wait");
		const body = await bodyOf(res);
		const log = gw.registry.get(id).events;
		const settled = log.since(body.firstEventId - 1).events.find((e) => e.type === "agent_settled");
		expect(body).toMatchObject({
			runId: expect.stringMatching(/^gw_/),
			disposition: "started",
			aborted: false,
			text: "Hello from the pi-gateway demo model. You said: waited",
			stopReason: "stop",
			lastEventId: settled?.seq,
		});
		expect(body.messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant"]);
		expect(body.usage).toMatchObject({ input: expect.any(Number), output: 9 }); // one per word
		const first = log.since(body.firstEventId - 1).events[0];
		expect(first).toMatchObject({ type: "response" });
		expect(String(first?.data)).toContain(`"id":"${body.runId}"`);
	});

	it("a handled prompt answers at pi's response; a failed run still settles and says why", async () => {
		const handled = await post("/prompt", { message: "/hello there" }, { prefer: "wait" });
		expect(handled.status).toBe(200);
		expect(await bodyOf(handled)).toMatchObject({ disposition: "handled", messages: [], text: null, aborted: false });
		const failed = await post("/prompt", { message: "fail: provider down" }, { prefer: "wait" });
		expect(failed.status).toBe(200);
		const body = await bodyOf(failed);
		expect(body).toMatchObject({ disposition: "started", aborted: false, stopReason: "error", text: null });
		expect(body.messages.at(-1)).toMatchObject({ role: "assistant", errorMessage: "provider down" });
	});

	it("?wait=true answers 200 too, without Preference-Applied (no Prefer was sent)", async () => {
		const res = await post("/prompt?wait=true", { message: "echo: q" });
		expect(res.status).toBe(200);
		expect(res.headers.get("preference-applied")).toBeNull();
		expect((await bodyOf(res)).text).toBe("q");
	});

	it("past the wait limit answers 202 with the run id and where to continue", async () => {
		const before = gw.registry.get(id).events.lastSeq;
		const started = Date.now();
		const res = await post("/prompt", { message: "slow: 30" }, { prefer: "respond-async, wait=1" });
		// A timer never fires early, so this lower bound holds on any machine; the upper one is a state:
		// the run (3 s of deltas) had not settled when the 202 came.
		expect(Date.now() - started).toBeGreaterThanOrEqual(950);
		const settledYet = gw.registry
			.get(id)
			.events.since(before)
			.events.some((e) => e.type === "agent_settled");
		expect(res.status).toBe(202);
		expect(res.headers.get("preference-applied")).toBeNull();
		const body = await bodyOf(res);
		expect(settledYet).toBe(false);
		expect(body).toEqual({ runId: body.runId, disposition: "started", eventsUrl: expect.any(String) });
		const frames = await collect(await gw.fetch(body.eventsUrl), (f) => f.event === "agent_settled");
		expect(frames.find((f) => f.event === "response")?.json.id).toBe(body.runId);
		expect(deltas(frames)).toBe(Array.from({ length: 30 }, (_, i) => i + 1).join(" "));
		await idle();
		// wait=0: the deadline is now. Usually that is before pi answers (202 pending), but a gateway
		// descheduled on a busy machine can read pi's answer before its 0 ms timer runs (202 started);
		// either way pi's answer is on the stream. (approvals-lifecycle holds pi's answer for certain.)
		const quick = await post("/prompt?wait=0", { message: "slow: 3" });
		expect(quick.status).toBe(202);
		const quickBody = await bodyOf(quick);
		expect(["pending", "started"]).toContain(quickBody.disposition);
		const quickFrames = await collect(await gw.fetch(quickBody.eventsUrl), (f) => f.event === "agent_settled");
		expect(quickFrames.find((f) => f.event === "response")?.json).toMatchObject({
			id: quickBody.runId,
			data: { disposition: "started" },
		});
		await idle();
	});

	it("a waited steer answers when the run it joined settles; with no run it answers 202 (still queued)", async () => {
		// The previous test's run may still be settling on a loaded machine.
		await until(() => gw.registry.get(id).status === "idle");
		expect((await post("/prompt", { message: "slow: 4" })).status).toBe(202);
		await until(() => gw.registry.get(id).isRunning);
		const res = await post("/steer", { message: "steered" }, { prefer: "wait=20" });
		expect(res.status).toBe(200);
		expect(res.headers.get("preference-applied")).toBe("wait=20");
		const body = await bodyOf(res);
		expect(body.disposition).toBe("queued");
		expect(body.text).toBe("Hello from the pi-gateway demo model. You said: steered");
		const idleSteer = await post("/follow-up", { message: "later" }, { prefer: "wait" });
		expect(idleSteer.status).toBe(202);
		expect(await bodyOf(idleSteer)).toMatchObject({ disposition: "queued" });
		const cleared = await gw.api(`/v1/sessions/${id}/queue/clear`, { method: "POST" });
		expect(cleared.body).toEqual({ steering: [], followUp: ["later"] });
	});
});

describe("when pi goes away mid-run", () => {
	it("the run's stream ends with session_exit and a waiting request gets 502", async () => {
		const other = await gw.session({ persist: false });
		const reader = frameReader(await streamed("/prompt", { message: "slow: 50" }, other));
		await reader.until(isDelta);
		const waited = post("/steer", { message: "never answered" }, { prefer: "wait" }, other);
		await until(() =>
			gw.registry
				.get(other)
				.events.since(0)
				.events.some((e) => e.type === "queue_update"),
		);
		expect((await gw.api(`/v1/sessions/${other}`, { method: "DELETE" })).status).toBe(204);
		const frames = await reader.rest();
		expect(frames.at(-1)?.json).toMatchObject({ type: "session_exit", sessionId: other, reason: "stopped" });
		const res = await waited;
		expect(res.status).toBe(502);
		expect(await bodyOf(res)).toMatchObject({ code: "pi_exited" });
	});
});

describe("Accept: text/event-stream on bash", () => {
	it("streams the command's bash_execution_update events, then its response, then ends", async () => {
		const command = "printf 'one\\n'; sleep 0.1; printf 'two\\n'; sleep 0.1; printf 'three\\n'";
		const res = await streamed("/bash", { command });
		expect(res.status).toBe(200);
		expect(res.headers.get("content-type")).toBe("text/event-stream");
		const frames = await collect(res);
		const commandId = frames[0]?.json.commandId;
		expect(frames[0]?.json).toMatchObject({ type: "stream_open", sessionId: id, commandId: expect.any(String) });
		const updates = frames.filter((f) => f.event === "bash_execution_update");
		expect(updates.length).toBeGreaterThanOrEqual(2);
		expect(new Set(updates.map((f) => f.json.id))).toEqual(new Set([commandId]));
		expect(updates.map((f) => f.json.delta).join("")).toBe("one\ntwo\nthree\n");
		expect(events(frames)).toEqual(["stream_open", ...updates.map(() => "bash_execution_update"), "response"]);
		expect(frames.at(-1)?.json).toMatchObject({
			id: commandId,
			command: "bash",
			success: true,
			data: { output: "one\ntwo\nthree\n", exitCode: 0 },
		});
	});

	it("a bash that cannot start is an HTTP error, not a stream", async () => {
		const res = await streamed("/bash", { command: "" });
		expect(res.status).toBe(400);
		const gone = await streamed("/bash", { command: "true" }, "ses_nope");
		expect(gone.status).toBe(404);
	});
});
