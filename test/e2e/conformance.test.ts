import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { noPool, startTestGateway, type TestGateway } from "../helpers/gateway.ts";
import { OpenApiValidator } from "../helpers/openapi-validate.ts";
import { collect, type Frame, readFrames } from "../helpers/sse.ts";

// The checker that test/helpers/gateway.ts runs on every answer: first that it catches lies,
// then the system routes no other e2e file calls, checked live.
const v = new OpenApiValidator();
const problem = { type: "urn:pi-gateway:problem:x", title: "Not Found", status: 404, code: "x", detail: "d" };
const session = {
	id: "ses_Qm9wYXJ0aWFs",
	resumable: true,
	name: null,
	status: "idle",
	node: null,
	pid: 42,
	cwd: "/w",
	persist: true,
	createdAt: "2026-01-01T00:00:00.000Z",
	lastActivityAt: "2026-01-01T00:00:00.000Z",
	piSessionId: null,
	piSessionFile: null,
	model: null,
	thinkingLevel: null,
	currentRunId: null,
	queuedCommands: 0,
	pendingApprovals: 0,
	pendingToolCalls: 0,
	budget: { maxTokens: null, maxCostUsd: null, usedTokens: 0, usedCostUsd: 0, exhausted: null },
	lastEventId: 3,
	exit: null,
	folderRestore: null,
	preview: null,
	lastError: null,
};
const json = "application/json";

describe("the response checker", () => {
	it("matches concrete paths to templates, literal segments first", () => {
		expect(v.template("/v1/sessions/ses_1/approvals/abc?x=1")).toBe("/v1/sessions/{id}/approvals/{approvalId}");
		expect(v.template("/v1/sessions/ses_1/model/cycle")).toBe("/v1/sessions/{id}/model/cycle");
		expect(v.template("/v1/approvals")).toBe("/v1/approvals");
		expect(v.template("/v1/nothing")).toBeUndefined();
	});

	it("accepts a true answer", () => {
		expect(v.check("GET", "/v1/sessions/ses_1", 200, json, session)).toEqual([]);
		expect(v.check("GET", "/v1/sessions/ses_1", 404, "application/problem+json", problem)).toEqual([]);
		expect(v.check("DELETE", "/v1/sessions/ses_1", 204, null, undefined)).toEqual([]);
		expect(v.check("POST", "/v1/sessions/ses_1/prompt/stream", 200, "text/event-stream", "id: 1\n")).toEqual([]);
	});

	it("rejects a status the operation does not declare", () => {
		expect(v.check("GET", "/v1/sessions/ses_1", 409, "application/problem+json", problem)).toEqual([
			"GET /v1/sessions/{id} → 409: status 409 is not declared",
		]);
	});

	it("rejects a content type the response does not list", () => {
		expect(v.check("GET", "/v1/sessions/ses_1", 404, json, problem)).toEqual([
			'GET /v1/sessions/{id} → 404: content type "application/json" is not declared (application/problem+json)',
		]);
		expect(v.check("GET", "/v1/sessions", 200, "text/event-stream", "")).toHaveLength(1);
	});

	it("rejects a body on a bodiless response", () => {
		expect(v.check("DELETE", "/v1/sessions/ses_1", 204, json, {})).toEqual([
			"DELETE /v1/sessions/{id} → 204: declares no body but one was sent",
		]);
	});

	it("rejects a missing field, a wrong type, and an undocumented field on the gateway's own objects", () => {
		const { pid: _, ...noPid } = session;
		expect(v.check("GET", "/v1/sessions/ses_1", 200, json, noPid)).toEqual([
			`GET /v1/sessions/{id} → 200: body must have required property 'pid' {"missingProperty":"pid"}`,
		]);
		expect(v.check("GET", "/v1/sessions/ses_1", 200, json, { ...session, status: "sleepy" })[0]).toContain(
			"body/status must be equal to one of the allowed values",
		);
		expect(v.check("GET", "/v1/sessions/ses_1", 200, json, { ...session, secret: 1 })[0]).toContain(
			'must NOT have additional properties {"additionalProperty":"secret"}',
		);
	});

	it("lets pi's pass-through objects carry fields newer pi versions add", () => {
		const state = {
			thinkingLevel: "off",
			isStreaming: false,
			isCompacting: false,
			steeringMode: "all",
			followUpMode: "all",
			sessionId: "s",
			autoCompactionEnabled: true,
			messageCount: 0,
			pendingMessageCount: 0,
			fromTheFuture: true,
		};
		expect(v.check("GET", "/v1/sessions/ses_1/state", 200, json, state)).toEqual([]);
	});

	it("checks SSE frames against their event schema", () => {
		expect(v.checkEvent("agent_settled", { type: "agent_settled", aborted: false })).toEqual([]);
		expect(v.checkEvent("agent_settled", { type: "agent_settled" })).toHaveLength(1);
		expect(v.checkEvent("agent_settled", { type: "agent_end", aborted: false })).toEqual([
			'event agent_settled: body/type must be equal to one of the allowed values {"allowedValues":["agent_settled"]}',
		]);
		expect(v.checkEvent("made_up", { type: "made_up" })).toEqual(["event made_up: not documented in openapi.yaml"]);
	});

	it("holds routes outside the spec to problem+json for errors only", () => {
		expect(v.check("GET", "/nowhere", 404, "application/problem+json", problem)).toEqual([]);
		expect(v.check("GET", "/nowhere", 404, "application/problem+json", { detail: "d" })).toHaveLength(4);
		expect(v.check("GET", "/docs/", 200, "text/html", "<html>")).toEqual([]);
	});
});

describe("system routes, live", () => {
	let gw: TestGateway;
	beforeAll(async () => {
		gw = await startTestGateway({ ...noPool, token: "conformance-token-0123456" });
	});
	afterAll(() => gw?.stop());

	// gw.api() throws when an answer does not conform; these assert the rest.
	it("health, readiness, info, metrics, the empty inbox, an unknown route", async () => {
		expect((await gw.api("/healthz")).body).toEqual({ status: "ok" });
		expect((await gw.api("/readyz")).body).toMatchObject({ status: "ready", registry: { writable: true } });
		expect((await gw.api("/v1/info")).body).toMatchObject({ name: "pi-gateway", demo: true, sessions: 0 });
		expect((await gw.api("/metrics")).status).toBe(200);
		expect((await gw.api("/v1/approvals?status=pending")).body).toEqual({
			approvals: [],
			nextCursor: "0",
			hasMore: false,
		});
		expect((await gw.api("/v1/approvals?limit=0")).status).toBe(400);
		expect((await gw.api("/v1/nowhere")).status).toBe(404);
		expect((await gw.api("/v1/info", { headers: { authorization: "Bearer wrong" } })).status).toBe(401);
	});
});

describe("event streams, live", () => {
	let gw: TestGateway;
	const gate = join(resolve(import.meta.dirname, "../.."), "examples/fixtures/confirm-gate.ts");
	beforeAll(async () => {
		gw = await startTestGateway({ ...noPool, extensions: { gate } });
	});
	afterAll(() => gw?.stop());

	const stream = (path: string, init: RequestInit = {}) =>
		gw.fetch(path, {
			...init,
			headers: { accept: "text/event-stream", "content-type": "application/json", ...init.headers },
		});

	it("every frame of runs, approvals, failures and an exit fits its documented event", async () => {
		const id = await gw.session({ extensions: ["gate"] });
		const whole = collect(await stream(`/v1/sessions/${id}/events?after=0`));
		const frames: Frame[] = [];
		const run = await stream(`/v1/sessions/${id}/prompt`, {
			method: "POST",
			body: JSON.stringify({ message: "bash: rm -rf ./nothing && echo gone" }),
		});
		for await (const frame of readFrames(run)) {
			frames.push(frame);
			if (frame.event === "approval_requested") {
				const answer = { confirmed: true };
				const path = `/v1/sessions/${id}/approvals/${frame.json.approval.id}`;
				expect((await gw.api(path, { method: "POST", json: answer })).status).toBe(200);
			}
		}
		const prompt = (message: string) =>
			stream(`/v1/sessions/${id}/prompt`, { method: "POST", body: JSON.stringify({ message }) });
		frames.push(...(await collect(await prompt("count: 3"))), ...(await collect(await prompt("fail: on purpose"))));
		expect((await gw.api(`/v1/sessions/${id}/bash`, { method: "POST", json: { command: "echo hi" } })).status).toBe(
			200,
		);
		expect((await gw.api(`/v1/sessions/${id}`, { method: "DELETE" })).status).toBe(204);
		frames.push(...(await whole));

		const seen = new Set(frames.map((f) => f.event));
		for (const type of ["stream_open", "approval_requested", "approval_resolved", "session_exit", "agent_settled"])
			expect(seen, type).toContain(type);
		expect(frames.flatMap((f) => v.checkEvent(f.event, f.json))).toEqual([]);
	});
});

describe("bodies a client gets wrong", () => {
	it("come back as clear problem+json: not JSON, not an object, a misfit answer", async () => {
		const gw = await startTestGateway(noPool);
		try {
			const id = await gw.session({ persist: false });
			const asText = await gw.api(`/v1/sessions/${id}/prompt`, {
				method: "POST",
				body: "hello",
				headers: { "content-type": "text/plain" },
			});
			expect(asText.status).toBe(415);
			expect(asText.body).toMatchObject({ code: "unsupported_media_type" });
			const answer = await gw.api(`/v1/sessions/${id}/approvals/none`, { method: "POST", json: { confirmed: "yes" } });
			expect(answer.status).toBe(400);
			expect(answer.body.detail).toContain("{confirmed: boolean}, {value: string} or {cancelled: true}");
		} finally {
			await gw.stop();
		}
	});
});
