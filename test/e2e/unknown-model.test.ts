import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alive, noPool, startTestGateway, type TestGateway } from "../helpers/gateway.ts";

// Issue 25: a model pi cannot run is refused at create (422 with the models pi offers), not
// accepted and failed at the first prompt with pi's "Use /login" (real pi, the demo model).
let gw: TestGateway;
beforeAll(async () => {
	gw = await startTestGateway(noPool);
});
afterAll(() => gw?.stop());

const sessionIds = async () =>
	((await gw.api("/v1/sessions")).body.sessions as { id: string }[]).map((session) => session.id);

describe("POST /v1/sessions with a model pi cannot run", () => {
	for (const body of [
		{ provider: "pi-gateway-demo", model: "no-such-model" },
		{ provider: "anthropic", model: "claude-sonnet-4-5" },
	]) {
		it(`${body.provider}/${body.model}: 422 unknown_model listing the available ones; no session left`, async () => {
			const before = await sessionIds();
			const { status, body: problem, res } = await gw.api("/v1/sessions", { method: "POST", json: body });
			expect(status).toBe(422);
			expect(res.headers.get("content-type")).toContain("application/problem+json");
			expect(problem).toMatchObject({ code: "unknown_model", status: 422, models: ["pi-gateway-demo/demo"] });
			expect(problem.detail).toContain(`"${body.provider}/${body.model}"`);
			expect(problem.detail).toContain("available: pi-gateway-demo/demo");
			expect(await sessionIds()).toEqual(before);
			expect(gw.registry.list().map((s) => s.id)).toEqual(before);
		});
	}

	it("a model id pi does not know at all (no provider): 422 unknown_model, not 502 pi_start_failed", async () => {
		// pi exits at start with its own "Model … not found"; that is the caller's input.
		const before = await sessionIds();
		const { status, body: problem, res } = await gw.api("/v1/sessions", { method: "POST", json: { model: "nope" } });
		expect(status).toBe(422);
		expect(res.headers.get("content-type")).toContain("application/problem+json");
		expect(problem).toMatchObject({ code: "unknown_model", status: 422, title: "Unprocessable Content" });
		expect(problem.detail).toContain('Model "nope" not found');
		expect(await sessionIds()).toEqual(before);
	});

	it("a model pi offers is created as before", async () => {
		const { status, body } = await gw.api("/v1/sessions", {
			method: "POST",
			json: { provider: "pi-gateway-demo", model: "demo" },
		});
		expect(status).toBe(201);
		expect(body.model).toEqual({ provider: "pi-gateway-demo", id: "demo" });
		const short = await gw.api("/v1/sessions", { method: "POST", json: { model: "demo" } });
		expect(short.status).toBe(201);
		expect(alive(gw.registry.get(short.body.id).pid as number)).toBe(true);
	});
});
