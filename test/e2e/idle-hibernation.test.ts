import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alive, runEnded, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { collect } from "../helpers/sse.ts";

// Issue 45 item 1: an idle session gives its pi back after --idle-timeout-ms (a minute by default)
// and its next command wakes it; what waits on a session (a dialog, a client tool call, an
// ephemeral session's conversation) keeps it, and a stream goes on across the hibernation.
const gate = resolve(import.meta.dirname, "../../extensions/permission-gate.ts");
const lookupPrice = {
	name: "lookup_price",
	description: "The price of a product in EUR, by its SKU",
	parameters: { type: "object", properties: { sku: { type: "string" } }, required: ["sku"] },
};

describe("the default start", () => {
	let gw: TestGateway;
	beforeAll(async () => {
		gw = await startTestGateway();
	});
	afterAll(() => gw?.stop());

	it("hibernates a persistent session after a minute idle, an ephemeral one (which cannot) after 30 min", async () => {
		const { limits } = (await gw.api("/v1/info")).body;
		expect(limits).toMatchObject({ idleTimeoutMs: 60_000, ephemeralIdleTimeoutMs: 1_800_000 });
	});
});

describe("a short idle delay", () => {
	let gw: TestGateway;
	beforeAll(async () => {
		gw = await startTestGateway({ idleTimeoutMs: 1500, warmPool: 1, extensions: { gate } });
	});
	afterAll(() => gw?.stop());

	const status = async (id: string) => (await gw.api(`/v1/sessions/${id}`)).body;
	const prompt = (id: string, message: string) =>
		gw.api(`/v1/sessions/${id}/prompt?wait=true`, { method: "POST", json: { message } });

	it("hibernates an idle session; its next prompt answers, and a stream resumed by Last-Event-ID goes on", async () => {
		const id = await gw.session();
		expect((await prompt(id, "echo: before")).body.text).toBe("before");
		await runEnded(gw, id);
		const { pid, lastEventId } = await status(id);
		// A stream open on the idle session does not hold its pi: it is told, resumable, and ends.
		const open = await collect(await gw.fetch(`/v1/sessions/${id}/events?after=${lastEventId}`));
		expect(open.at(-1)?.json).toMatchObject({ type: "session_exit", reason: "idle", resumable: true });
		expect(await status(id)).toMatchObject({ status: "stopped", pid: null, resumable: true });
		expect(alive(pid)).toBe(false);
		const seen = open.filter((f) => f.id).at(-1)?.id as string;

		const resumed = await gw.fetch(`/v1/sessions/${id}/events`, { headers: { "last-event-id": seen } });
		const frames = collect(resumed, (f) => f.event === "agent_settled");
		const woken = await prompt(id, "echo: after");
		expect(woken.status).toBe(200);
		expect(woken.body.text).toBe("after");
		const ids = (await frames).filter((f) => f.id).map((f) => Number(f.id));
		expect((await frames).map((f) => f.event)).not.toContain("gap");
		expect(ids[0]).toBe(Number(seen) + 1);
		expect(ids).toEqual(ids.map((_, i) => Number(seen) + 1 + i));
		expect((await status(id)).pid).not.toBe(pid);
		await gw.api(`/v1/sessions/${id}`, { method: "DELETE" });
	});

	it("counts a session taken from the warm pool idle from its create, not from when its pi started", async () => {
		const poolSize = async () => {
			const text = await (await gw.fetch("/metrics")).text();
			return Number(/^pi_gateway_warm_pool_size (\d+)/m.exec(text)?.[1] ?? 0);
		};
		await until(async () => (await poolSize()) === 1, 60_000);
		const id = await gw.session();
		expect(await poolSize()).toBe(0);
		const { createdAt, lastActivityAt, status: now } = await status(id);
		expect(now).toBe("idle");
		expect(Date.parse(lastActivityAt)).toBeGreaterThanOrEqual(Date.parse(createdAt));
		await gw.api(`/v1/sessions/${id}`, { method: "DELETE" });
	});

	it("wakes a session that hibernated before its first prompt (pi had written no file yet)", async () => {
		const id = await gw.session();
		await until(async () => (await status(id)).status === "stopped", 60_000);
		const first = await prompt(id, "echo: first");
		expect(first.status).toBe(200);
		expect(first.body).toMatchObject({ stopReason: "stop", text: "first" });
		expect((await prompt(id, "echo: second")).body.text).toBe("second");
		const messages = (await gw.api(`/v1/sessions/${id}/messages`)).body.messages;
		expect(messages.filter((m: { role: string }) => m.role === "user")).toHaveLength(2);
		await gw.api(`/v1/sessions/${id}`, { method: "DELETE" });
	});

	// Skipped at e7d34e1 after one 502 in a clean-clone run (load ~10), which did not say which
	// request or why; it passed 11 of 11 times at load 20–25 since (alone and with its file). Each
	// answer's status now carries its body, so a failure says what ended the run.
	it("keeps the pi of a pending approval, a client tool call waiting and an ephemeral session; each answers after", {
		timeout: 180_000,
	}, async () => {
		const asking = await gw.session({ extensions: ["gate"] });
		const calling = await gw.session({ clientTools: [lookupPrice] });
		const ephemeral = await gw.session({ persist: false });
		expect((await prompt(ephemeral, "echo: kept")).body.text).toBe("kept");
		const approved = prompt(asking, "bash: rm -rf ./scratch");
		const called = prompt(calling, 'tool: lookup_price {"sku":"A-1"}');
		const approval = await until(
			async () => (await gw.api(`/v1/sessions/${asking}/approvals?status=pending`)).body.approvals[0],
			60_000,
		);
		const call = await until(
			async () => (await gw.api(`/v1/sessions/${calling}/tool-calls?status=pending`)).body.toolCalls[0],
			60_000,
		);
		const pids = await Promise.all([asking, calling, ephemeral].map(async (id) => (await status(id)).pid));

		// A witness used after all three went quiet: once it hibernates, they idled longer than the delay.
		const witness = await gw.session();
		const seen = await prompt(witness, "echo: witness");
		expect(seen.body, JSON.stringify(seen.body)).toMatchObject({ text: "witness" });
		await until(async () => (await status(witness)).status === "stopped", 60_000);
		expect(await status(asking)).toMatchObject({ status: "waiting", pid: pids[0], pendingApprovals: 1 });
		expect(await status(calling)).toMatchObject({ status: "waiting", pid: pids[1], pendingToolCalls: 1 });
		expect(await status(ephemeral)).toMatchObject({ status: "idle", pid: pids[2] });

		const answer = (path: string, json: unknown) => gw.api(path, { method: "POST", json });
		expect((await answer(`/v1/sessions/${asking}/approvals/${approval.id}`, { value: "Allow" })).status).toBe(200);
		const allowed = await approved;
		expect(allowed.status, JSON.stringify(allowed.body)).toBe(200);
		const callPath = `/v1/sessions/${calling}/tool-calls/${encodeURIComponent(call.id)}`;
		expect((await answer(callPath, { output: "12.50 EUR" })).status).toBe(200);
		const result = await called;
		expect(result.status, JSON.stringify(result.body)).toBe(200);
		expect(result.body.text).toBe("12.50 EUR");
		expect((await prompt(ephemeral, "echo: still here")).body.text).toBe("still here");
		for (const id of [asking, calling, ephemeral, witness]) await gw.api(`/v1/sessions/${id}`, { method: "DELETE" });
	});
});
