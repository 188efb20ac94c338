import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fixtures, noPool, sleep, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { collect } from "../helpers/sse.ts";

// How approvals end: answered late past the command deadline, pi's own timeout, a run that settles
// meanwhile, pi dying, the gateway's policy timeout. Real pi with the dialogs test extension.
const dialogs = join(fixtures, "extensions/dialogs.ts");
let gw: TestGateway;
let id: string;

beforeAll(async () => {
	gw = await startTestGateway({ ...noPool, extensions: { dialogs }, commandTimeoutMs: 1000 });
	id = await gw.session({ extensions: ["dialogs"] });
});
afterAll(() => gw?.stop());

const prompt = (message: string, sessionId = id, g = gw) =>
	g.api(`/v1/sessions/${sessionId}/prompt`, { method: "POST", json: { message } });
const answer = (approvalId: string, json: unknown, sessionId = id, g = gw) =>
	g.api(`/v1/sessions/${sessionId}/approvals/${approvalId}`, { method: "POST", json });
const pending = (sessionId = id, g = gw) =>
	until(async () => (await g.api(`/v1/sessions/${sessionId}/approvals?status=pending`)).body.approvals[0]);
const notifications = async (sessionId = id, g = gw) =>
	(await g.api(`/v1/sessions/${sessionId}/ui`)).body.notifications.map((n: { message: string }) => n.message);

/** pi's `response` to command `runId` in the session's log, once it is there. */
const responseIn = (runId: string, sessionId = id, g = gw) =>
	g.registry
		.get(sessionId)
		.events.since(0)
		.events.find((e) => e.type === "response" && JSON.parse(String(e.data)).id === runId);

describe("JSON answers while a dialog holds pi's answer", () => {
	it.each([
		["plain", "/prompt", {}],
		["Prefer: wait=30", "/prompt", { prefer: "wait=30" }],
		["?wait=true", "/prompt?wait=true", {}],
	])(
		"%s: 202 awaiting_approval at once, with the approvals to answer; pi's answer follows on the stream",
		async (_, path, headers) => {
			const res = await gw.api(`/v1/sessions/${id}${path}`, { method: "POST", headers, json: { message: "/trio" } });
			expect(res.status).toBe(202);
			const { runId, eventsUrl, approvals } = res.body;
			expect(res.body).toEqual({
				runId: expect.any(String),
				disposition: "awaiting_approval",
				eventsUrl: expect.stringMatching(/^\/v1\/sessions\/.+\/events\?after=\d+$/),
				approvals: [
					{
						id: expect.any(String),
						url: expect.any(String),
						approval: expect.objectContaining({ method: "select", title: "Pick a color", status: "pending" }),
					},
				],
			});
			expect(approvals[0].url).toBe(`/v1/sessions/${id}/approvals/${approvals[0].id}`);
			expect(responseIn(runId)).toBeUndefined();
			// Follow the answers through: each next dialog appears on the stream the 202 named.
			const stream = await fetch(gw.url + eventsUrl, { headers: { authorization: `Bearer ${gw.config.token}` } });
			const frames = collect(stream, (f) => f.event === "response" && f.json.id === runId);
			expect((await gw.api(approvals[0].url, { method: "POST", json: { value: "red" } })).status).toBe(200);
			expect((await answer((await pending()).id, { value: "Bo" })).status).toBe(200);
			expect((await answer((await pending()).id, { value: "n" })).status).toBe(200);
			expect((await frames).at(-1)?.json).toMatchObject({ success: true, data: { disposition: "handled" } });
			expect((await notifications()).at(-1)).toBe('trio {"color":"red","name":"Bo","notes":"n"}');
		},
	);

	it("wait mode keeps its deadline while pi has not answered: 202 pending, pi's answer comes on the stream", async () => {
		const res = await gw.api(`/v1/sessions/${id}/prompt`, {
			method: "POST",
			headers: { prefer: "wait=0" },
			json: { message: "/sleep 800" },
		});
		expect(res.status).toBe(202);
		expect(res.body).toEqual({ runId: expect.any(String), disposition: "pending", eventsUrl: expect.any(String) });
		expect(responseIn(res.body.runId)).toBeUndefined();
		const response = await until(() => responseIn(res.body.runId));
		expect(JSON.parse(String(response.data))).toMatchObject({ success: true, data: { disposition: "handled" } });
	});
});

describe("an extension command", () => {
	it("gets pi's answer late: the 1 s command deadline does not run while its dialog waits", async () => {
		// Control: a command that holds its response without a dialog does hit the deadline.
		const held = await prompt("/sleep 1500");
		expect(held.body).toMatchObject({ status: 504, code: "pi_timeout", detail: "pi did not answer prompt within 1s" });
		await until(() => gw.registry.get(id).status === "idle");

		// Streamed, so a 504 would show as an `error` frame where pi's response should be.
		const res = await fetch(`${gw.url}/v1/sessions/${id}/prompt`, {
			method: "POST",
			headers: {
				accept: "text/event-stream",
				"content-type": "application/json",
				authorization: `Bearer ${gw.config.token}`,
			},
			body: JSON.stringify({ message: "/trio" }),
		});
		let ended = false;
		const frames = collect(res).then((all) => {
			ended = true;
			return all;
		});
		const answers = [{ value: "green" }, { value: "Ada" }, { value: "line 1\nline 2\nline 3" }];
		const seen = [];
		for (const json of answers) {
			const approval = await pending();
			seen.push(approval);
			expect((await gw.api(`/v1/sessions/${id}`)).body.status).toBe("waiting");
			// Longer than the command deadline: it must not be running while the dialog waits.
			await sleep(1300);
			expect(ended).toBe(false);
			expect((await answer(approval.id, json)).status).toBe(200);
		}
		expect(
			seen.map(({ method, title, options, placeholder, prefill }) => ({
				method,
				title,
				options,
				placeholder,
				prefill,
			})),
		).toEqual([
			{ method: "select", title: "Pick a color", options: ["red", "green", "blue"] },
			{ method: "input", title: "Your name?", placeholder: "e.g. Ada" },
			{ method: "editor", title: "Edit the notes", prefill: "line 1\nline 2" },
		]);
		const last = (await frames).at(-1);
		expect(last?.event).toBe("response");
		expect(last?.json).toMatchObject({ command: "prompt", success: true, data: { disposition: "handled" } });
		expect((await notifications()).at(-1)).toBe(
			'trio {"color":"green","name":"Ada","notes":"line 1\\nline 2\\nline 3"}',
		);
		expect((await gw.api(`/v1/sessions/${id}`)).body.status).toBe("idle");
	});

	it("a dialog outlives a run that settles meanwhile: pi still waits for it", async () => {
		const run = gw.api(`/v1/sessions/${id}/prompt?wait=true`, { method: "POST", json: { message: "slow: 4" } });
		await until(async () => (await gw.api(`/v1/sessions/${id}`)).body.status === "running");
		const confirm = prompt("/confirm");
		const approval = await pending();
		expect(approval).toMatchObject({ method: "confirm", title: "Proceed?", message: "This is only a test." });
		expect((await run).body.text).toBe("1 2 3 4");
		expect((await gw.api(`/v1/sessions/${id}/approvals/${approval.id}`)).body.status).toBe("pending");
		expect((await gw.api(`/v1/sessions/${id}`)).body.status).toBe("waiting");
		expect((await confirm).body.disposition).toBe("awaiting_approval");
		expect((await answer(approval.id, { confirmed: true })).status).toBe(200);
		await until(async () => (await notifications()).at(-1) === "confirm true");
	});
});

describe("pi's own timeout", () => {
	it("expires the approval (410 to a late answer) and the extension gets the default", async () => {
		const timed = prompt("/timed 700");
		const approval = await pending();
		expect(Date.parse(approval.expiresAt) - Date.parse(approval.createdAt)).toBe(630);
		const expired = await until(async () => {
			const { body } = await gw.api(`/v1/sessions/${id}/approvals/${approval.id}`);
			return body.status !== "pending" && body;
		}, 3000);
		expect(expired).toMatchObject({ status: "expired", answer: null, resolvedBy: "pi-timeout" });
		expect((await answer(approval.id, { confirmed: true })).body).toMatchObject({ status: 410, code: "approval_gone" });
		expect((await timed).body.disposition).toBe("awaiting_approval");
		await until(async () => (await notifications()).at(-1) === "timed false");

		const select = prompt("/timed-select 400");
		const picked = await pending();
		await until(
			async () => (await gw.api(`/v1/sessions/${id}/approvals/${picked.id}`)).body.status === "expired",
			3000,
		);
		expect((await answer(picked.id, { value: "a" })).status).toBe(410);
		await select;
		await until(async () => (await notifications()).at(-1) === "timed-select undefined");
	});

	it("an answer in time wins", async () => {
		const timed = prompt("/timed 10000");
		const approval = await pending();
		expect((await answer(approval.id, { confirmed: true })).body.status).toBe("answered");
		await timed;
		await until(async () => (await notifications()).at(-1) === "timed true");
	});
});

describe("pi exits", () => {
	it("a pending approval becomes cancelled, and answering it is 410", async () => {
		const doomed = await gw.session({ extensions: ["dialogs"] });
		const { body: session } = await gw.api(`/v1/sessions/${doomed}`);
		const events = await gw.fetch(`/v1/sessions/${doomed}/events?after=${session.lastEventId}`, {
			headers: { accept: "text/event-stream" },
		});
		const frames = collect(events, (f) => f.event === "session_exit");
		const confirm = prompt("/confirm", doomed);
		const approval = await pending(doomed);
		expect((await confirm).body).toMatchObject({
			disposition: "awaiting_approval",
			approvals: [{ id: approval.id, approval }],
		});
		process.kill(session.pid, "SIGKILL");
		await until(async () => (await gw.api(`/v1/sessions/${doomed}`)).body.status === "crashed");
		expect((await gw.api(`/v1/sessions/${doomed}/approvals/${approval.id}`)).body).toMatchObject({
			status: "cancelled",
			answer: null,
			resolvedBy: "pi-exit",
		});
		expect((await answer(approval.id, { confirmed: true }, doomed)).body).toMatchObject({
			status: 410,
			code: "approval_gone",
		});
		expect((await gw.api(`/v1/sessions/${doomed}`)).body).toMatchObject({ status: "crashed", pendingApprovals: 0 });
		const gatewayEvents = (await frames)
			.filter((f) => f.event?.startsWith("approval_") || f.event?.startsWith("session_"))
			.map((f) => (f.event === "session_status" ? `status:${f.json.status}` : f.event));
		expect(gatewayEvents).toEqual([
			"approval_requested",
			"status:waiting",
			"approval_resolved",
			"status:crashed",
			"session_exit",
		]);
		await gw.api(`/v1/sessions/${doomed}`, { method: "DELETE" });
	});
});

describe("the gateway's approval timeout (approvalTimeoutMs)", () => {
	it("cancels an unanswered dialog so nothing hangs forever", async () => {
		const policed = await startTestGateway({ ...noPool, extensions: { dialogs }, approvalTimeoutMs: 800 });
		try {
			const sid = await policed.session({ extensions: ["dialogs"] });
			const confirm = prompt("/confirm", sid, policed);
			const approval = await pending(sid, policed);
			expect(Date.parse(approval.expiresAt) - Date.parse(approval.createdAt)).toBe(800);
			expect((await confirm).body.disposition).toBe("awaiting_approval");
			await until(async () => (await notifications(sid, policed)).length > 0);
			expect((await policed.api(`/v1/sessions/${sid}/approvals/${approval.id}`)).body).toMatchObject({
				status: "cancelled",
				answer: null,
				resolvedBy: "gateway-policy",
			});
			expect((await answer(approval.id, { confirmed: true }, sid, policed)).status).toBe(410);
			expect(await notifications(sid, policed)).toEqual(["confirm false"]);
		} finally {
			await policed.stop();
		}
	});
});
