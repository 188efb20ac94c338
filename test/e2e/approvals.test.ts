import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { fixtures, noPool, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { collect } from "../helpers/sse.ts";

// The permission gate shipped in extensions/, on real pi with the demo model, over real HTTP/SSE.
let gw: TestGateway;
let id: string;
/** The session's own folder, where its bash runs. */
let folder: string;
const gate = resolve(import.meta.dirname, "../../extensions/permission-gate.ts");

beforeAll(async () => {
	gw = await startTestGateway({ ...noPool, extensions: { gate, dialogs: join(fixtures, "extensions/dialogs.ts") } });
	id = await gw.session({ extensions: ["gate", "dialogs"] });
	folder = await gw.folder(id);
});
afterAll(() => gw?.stop());

const base = () => `/v1/sessions/${id}`;
const answer = (sessionId: string, approvalId: string, json: unknown) =>
	gw.api(`/v1/sessions/${sessionId}/approvals/${approvalId}`, { method: "POST", json });
/** The session's next pending approval, once it shows up in the cross-session inbox. */
const nextPending = (sessionId = id) =>
	until(async () => {
		const { body } = await gw.api("/v1/approvals?status=pending");
		return body.approvals.find((a: { sessionId: string }) => a.sessionId === sessionId);
	});
const scratch = () => {
	mkdirSync(join(folder, "scratch"), { recursive: true });
	writeFileSync(join(folder, "scratch", "file.txt"), "x");
};

describe("the permission gate", () => {
	it("holds rm -rf in a pending approval until it is allowed; then the tool runs and the run settles", async () => {
		scratch();
		const before = (await gw.api(base())).body.lastEventId;
		const types = "approval_requested,approval_resolved,session_status,tool_execution_end,agent_settled";
		const events = await gw.fetch(`${base()}/events?after=${before}&types=${types}`, {
			headers: { accept: "text/event-stream" },
		});
		const frames = collect(events, (f) => f.event === "session_status" && f.json.status === "idle");
		const run = gw.api(`${base()}/prompt?wait=true`, { method: "POST", json: { message: "bash: rm -rf ./scratch" } });

		const pending = await nextPending();
		expect(pending).toEqual({
			id: expect.stringMatching(/^[0-9a-f-]{36}$/),
			sessionId: id,
			method: "select",
			title: "Allow this bash command?\n\n  rm -rf ./scratch",
			options: ["Allow", "Block"],
			createdAt: expect.any(String),
			expiresAt: null,
			status: "pending",
			answer: null,
			resolvedAt: null,
			resolvedBy: null,
		});
		expect((await gw.api(`${base()}/approvals?status=pending`)).body).toEqual({
			approvals: [pending],
			nextCursor: expect.stringMatching(/^\d+$/),
			hasMore: false,
		});
		expect((await gw.api(`${base()}/approvals/${pending.id}`)).body).toEqual(pending);
		expect((await gw.api(base())).body).toMatchObject({ status: "waiting", pendingApprovals: 1 });
		expect(existsSync(join(folder, "scratch"))).toBe(true);

		const answered = await answer(id, pending.id, { value: "Allow", by: "alice" });
		expect(answered.status).toBe(200);
		expect(answered.body).toMatchObject({
			status: "answered",
			answer: { value: "Allow" },
			resolvedBy: "admin",
			note: "alice",
		});
		expect(Date.parse(answered.body.resolvedAt)).toBeGreaterThanOrEqual(Date.parse(pending.createdAt));

		const result = await run;
		expect(result.status).toBe(200);
		expect(result.body.messages.map((m: { role: string }) => m.role)).toEqual([
			"user",
			"assistant",
			"toolResult",
			"assistant",
		]);
		expect(result.body.messages[2].isError).toBe(false);
		expect(result.body.text).toBe("The command finished. Output:\n(no output)");
		expect(existsSync(join(folder, "scratch"))).toBe(false);
		expect((await gw.api(base())).body).toMatchObject({ status: "idle", pendingApprovals: 0 });
		expect((await gw.api(`${base()}/ui`)).body.notifications.at(-1)).toMatchObject({
			message: "Allowed: rm -rf ./scratch",
			level: "info",
		});

		const seen = (await frames).map((f) => (f.event === "session_status" ? `status:${f.json.status}` : f.event));
		expect(seen).toEqual([
			"stream_open",
			"status:running",
			"approval_requested",
			"status:waiting",
			"approval_resolved",
			"status:running",
			"tool_execution_end",
			"agent_settled",
			"status:idle",
		]);
		const [requested, resolved] = (await frames).filter((f) => f.event?.startsWith("approval_"));
		expect(requested?.json).toEqual({ type: "approval_requested", sessionId: id, approval: pending });
		expect(resolved?.json).toEqual({ type: "approval_resolved", sessionId: id, approval: answered.body });
	});

	it("blocks the command when denied, and the model sees why", async () => {
		scratch();
		const run = gw.api(`${base()}/prompt?wait=true`, { method: "POST", json: { message: "bash: rm -rf ./scratch" } });
		const pending = await nextPending();
		expect((await answer(id, pending.id, { value: "Block" })).body).toMatchObject({
			status: "answered",
			answer: { value: "Block" },
			resolvedBy: "admin",
		});
		const result = await run;
		const toolResult = result.body.messages[2];
		expect(toolResult).toMatchObject({ role: "toolResult", isError: true });
		expect(toolResult.content).toEqual([{ type: "text", text: "Blocked by the permission gate (Block)" }]);
		expect(result.body.text).toBe("The command finished. Output:\nBlocked by the permission gate (Block)");
		expect(existsSync(join(folder, "scratch", "file.txt"))).toBe(true);
		expect((await gw.api(`${base()}/ui`)).body.notifications.at(-1)).toMatchObject({
			message: "Blocked: rm -rf ./scratch",
			level: "warning",
		});
	});

	it("lets a harmless command through without asking", async () => {
		const result = await gw.api(`${base()}/prompt?wait=true`, { method: "POST", json: { message: "bash: echo safe" } });
		expect(result.body.text).toBe("The command finished. Output:\nsafe");
		expect((await gw.api(`${base()}/approvals?status=pending`)).body.approvals).toEqual([]);
	});
});

describe("answering", () => {
	it("422s an answer that does not fit the dialog and 400s one of no shape; it stays pending", async () => {
		const run = gw.api(`${base()}/prompt?wait=true`, { method: "POST", json: { message: "bash: sudo true" } });
		const pending = await nextPending();
		const outside = await answer(id, pending.id, { value: "Maybe" });
		expect(outside.status).toBe(422);
		expect(outside.res.headers.get("content-type")).toContain("application/problem+json");
		expect(outside.body).toMatchObject({
			code: "approval_answer_mismatch",
			detail: 'This is a select dialog: value must be one of ["Allow","Block"]',
		});
		expect((await answer(id, pending.id, { confirmed: true })).status).toBe(422);
		expect((await answer(id, pending.id, {})).body).toMatchObject({ status: 400, code: "invalid_input" });
		expect((await answer(id, pending.id, { value: "Allow", extra: 1 })).status).toBe(400);
		expect((await answer(id, "nope", { value: "Allow" })).body).toMatchObject({
			status: 404,
			code: "approval_not_found",
		});
		expect((await gw.api(`${base()}/approvals/${pending.id}`)).body.status).toBe("pending");
		expect((await answer(id, pending.id, { value: "Block" })).status).toBe(200);
		expect((await run).body.messages[2].content[0].text).toBe("Blocked by the permission gate (Block)");
	});

	it("of ten concurrent answers exactly one wins; the other nine get 409", async () => {
		const run = gw.api(`${base()}/prompt?wait=true`, { method: "POST", json: { message: "bash: sudo true" } });
		const pending = await nextPending();
		const values = ["Block", "Allow", "Block", "Allow", "Block", "Allow", "Block", "Allow", "Block", "Allow"];
		const results = await Promise.all(values.map((value) => answer(id, pending.id, { value, by: `client-${value}` })));
		const statuses = results.map((r) => r.status).sort();
		expect(statuses).toEqual([200, 409, 409, 409, 409, 409, 409, 409, 409, 409]);
		const winner = results.find((r) => r.status === 200)?.body;
		const loser = results.find((r) => r.status === 409)?.body;
		expect(loser).toMatchObject({
			code: "approval_already_answered",
			detail: `This approval was already answered by ${winner.resolvedBy}`,
		});
		expect((await gw.api(`${base()}/approvals/${pending.id}`)).body).toEqual(winner);
		// pi got the winner's answer and only that one.
		const text = (await run).body.messages[2].content[0].text;
		if (winner.answer.value === "Block") expect(text).toBe("Blocked by the permission gate (Block)");
		else expect(text).not.toContain("Blocked");
	});

	it("abort cancels a pending approval (pi's abort would wait for it), the tool is blocked and answering is 410", async () => {
		const run = gw.api(`${base()}/prompt?wait=true`, { method: "POST", json: { message: "bash: sudo true" } });
		const pending = await nextPending();
		// pi's abort would wait for the dialog forever; the gateway cancels it first, so this answers.
		expect((await gw.api(`${base()}/abort`, { method: "POST", json: {} })).status).toBe(204);
		expect((await gw.api(`${base()}/approvals/${pending.id}`)).body).toMatchObject({
			status: "cancelled",
			answer: null,
			resolvedBy: "gateway-abort",
		});
		expect((await answer(id, pending.id, { value: "Allow" })).body).toMatchObject({
			status: 410,
			code: "approval_gone",
		});
		const result = await run;
		expect(result.body).toMatchObject({ aborted: true, stopReason: "aborted" });
		// The gate got no answer and blocked; pi reports the aborted tool call.
		expect(result.body.messages[2]).toMatchObject({ role: "toolResult", isError: true });
		expect(result.body.messages[2].content).toEqual([{ type: "text", text: "Operation aborted" }]);
		expect((await gw.api(`${base()}/ui`)).body.notifications.at(-1).message).toBe("Blocked: sudo true");
		expect((await gw.api(base())).body.status).toBe("idle");
	});
});

describe("the inbox", () => {
	it("lists pending approvals across sessions oldest first, a page at a time", async () => {
		const other = await gw.session({ extensions: ["dialogs"] });
		const gated = gw.api(`${base()}/prompt`, { method: "POST", json: { message: "bash: sudo true" } });
		const first = await nextPending(id);
		expect((await gated).status).toBe(202);
		// The run is held in the gate, so the queue is free for an extension command in the same session.
		const confirm = gw.api(`${base()}/prompt`, { method: "POST", json: { message: "/confirm" } });
		const second = await until(async () => (await gw.api(`${base()}/approvals?status=pending`)).body.approvals[1]);
		const otherConfirm = gw.api(`/v1/sessions/${other}/prompt`, { method: "POST", json: { message: "/confirm" } });
		const third = await nextPending(other);
		expect([first.method, second.method, third.method]).toEqual(["select", "confirm", "confirm"]);

		const page1 = (await gw.api("/v1/approvals?status=pending&limit=2")).body;
		expect(page1.approvals).toEqual([first, second]);
		expect(page1.hasMore).toBe(true);
		const page2 = (await gw.api(`/v1/approvals?status=pending&limit=2&cursor=${page1.nextCursor}`)).body;
		expect(page2).toEqual({ approvals: [third], nextCursor: expect.any(String), hasMore: false });
		const sessionPage = (await gw.api(`${base()}/approvals?status=pending&limit=1`)).body;
		expect(sessionPage.approvals).toEqual([first]);
		expect(sessionPage.hasMore).toBe(true);
		expect((await gw.api("/v1/approvals?status=bogus")).status).toBe(400);
		expect((await gw.api("/v1/approvals?cursor=abc")).status).toBe(400);

		// A dialog held pi's answer to each /confirm, so each was answered 202 at once.
		expect((await confirm).body).toMatchObject({ disposition: "awaiting_approval", approvals: [{ id: second.id }] });
		expect((await otherConfirm).body).toMatchObject({
			disposition: "awaiting_approval",
			approvals: [{ id: third.id }],
		});
		await answer(id, second.id, { confirmed: true });
		await answer(other, third.id, { confirmed: false });
		await answer(id, first.id, { value: "Block" });
		await until(async () => (await gw.api(base())).body.status === "idle");
		const answered = (await gw.api("/v1/approvals?status=answered")).body.approvals.map((a: { id: string }) => a.id);
		expect(answered.slice(-3)).toEqual([first.id, second.id, third.id]);
		const otherNotes = async () =>
			(await gw.api(`/v1/sessions/${other}/ui`)).body.notifications.map((n: { message: string }) => n.message);
		await until(async () => (await otherNotes()).length > 0);
		expect(await otherNotes()).toEqual(["confirm false"]);
		await gw.api(`/v1/sessions/${other}`, { method: "DELETE" });
	});

	it("?wait=N answers as soon as an approval opens, and with an empty page after N seconds otherwise", async () => {
		const { nextCursor } = (await gw.api("/v1/approvals?status=pending")).body;
		const started = Date.now();
		const empty = await gw.api(`/v1/approvals?status=pending&wait=1&cursor=${nextCursor}`);
		expect(empty.body.approvals).toEqual([]);
		expect(Date.now() - started).toBeGreaterThanOrEqual(950);

		// The poll must be waiting in the gateway before the dialog opens, and still waiting when it does.
		const hub = vi.spyOn(gw.registry, "subscribeAll");
		let pollReturned = false;
		const polled = gw.api("/v1/approvals?status=pending&wait=20").then((res) => {
			pollReturned = true;
			return res;
		});
		await until(() => hub.mock.calls.length > 0);
		hub.mockRestore();
		let returnedBeforeDialog: boolean | undefined;
		const unsubscribe = gw.registry.get(id).events.subscribe((event) => {
			if (event.type === "approval_requested") returnedBeforeDialog ??= pollReturned;
		});
		const run = gw.api(`${base()}/prompt?wait=true`, { method: "POST", json: { message: "bash: sudo true" } });
		const { body } = await polled;
		unsubscribe();
		expect(returnedBeforeDialog).toBe(false);
		expect(body.approvals).toHaveLength(1);
		expect(body.approvals[0]).toMatchObject({ sessionId: id, method: "select", status: "pending" });
		await answer(id, body.approvals[0].id, { cancelled: true });
		expect((await run).body.messages[2].content[0].text).toBe("Blocked by the permission gate (no answer)");
	});
});
