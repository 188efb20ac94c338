import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/gateway.ts";

// An attack on whoever checks a client tool call's arguments: `uniqueItems` makes every checker
// compare each pair of items (pi's before the call reaches the program, the console's
// console-schema-check when a person answers it). With it allowed, the demo model's call of a
// tool with 15,000 distinct items took the console's check 9 s on this machine, quadratic in the
// arguments' length: a bigger call (a prompt may be 8 MiB) froze the page of whoever answered.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

let gw: TestGateway;
beforeAll(async () => {
	gw = await startTestGateway();
});
afterAll(async () => {
	await gw?.stop();
});

const tool = (parameters: Record<string, unknown>) => ({ name: "pick", description: "Pick some", parameters });

it("a client tool's parameters may not ask for uniqueItems, however deep or wherever it hides", async () => {
	const hidden: Record<string, unknown>[] = [
		{ type: "object", properties: { xs: { type: "array", uniqueItems: true } } },
		{ type: "object", $defs: { list: { type: "array", items: { type: "array", uniqueItems: true } } } },
		{ type: "object", dependentSchemas: { a: { properties: { xs: { uniqueItems: true } } } } },
	];
	for (const parameters of hidden) {
		const res = await gw.api("/v1/sessions", { method: "POST", json: { clientTools: [tool(parameters)] } });
		expect(res.status, JSON.stringify(parameters)).toBe(400);
		expect(JSON.stringify(res.body)).toMatch(/uniqueItems/);
	}
	// uniqueItems: false asks for nothing, and stays allowed.
	const fine = await gw.api("/v1/sessions", {
		method: "POST",
		json: { clientTools: [tool({ type: "object", properties: { xs: { type: "array", uniqueItems: false } } })] },
	});
	expect(fine.status).toBe(201);
	expect((await gw.api(`/v1/sessions/${fine.body.id}`, { method: "DELETE" })).status).toBe(204);
});
