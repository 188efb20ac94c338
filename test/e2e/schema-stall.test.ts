import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { compileOutputSchema, maxCheckSteps } from "../../src/sessions/runs/run-output.ts";
import { noPool, startTestGateway, type TestGateway } from "../helpers/gateway.ts";
import { anyOfChain, hostileOutputSchemas, hostileToolParameters } from "../helpers/hostile-schemas.ts";

// Issue 41 item 3, "No request holds the event loop": bob's outputSchema of 21 $defs (each an anyOf
// of two $refs to the next, 1.5 KB) made alice's GET /v1/sessions wait 12–30 s, /healthz answer 408
// and the gateway grow from 200 MB to 4.7 GB. Now every schema's cost is known before ajv runs: bob's
// worst schemas are 400 before pi, while alice's list answers. Real pi (demo model), README's layout.
let dir: string;
let keysFile: string;
let alice: string;
let bob: string;
let gw: TestGateway;
beforeAll(async () => {
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-schema-stall-"));
	keysFile = join(dir, "keys.json");
	alice = createKey(keysFile, "alice", ["sessions:read", "sessions:write"]).secret;
	bob = createKey(keysFile, "bob", ["sessions:read", "sessions:write"]).secret;
	gw = await startTestGateway({ ...noPool, keysFile });
});
afterAll(async () => {
	await gw?.stop();
	rmSync(dir, { recursive: true, force: true });
});

const as = (secret: string) => ({ authorization: `Bearer ${secret}` });
const create = async (secret: string, json: unknown) => {
	const { status, body } = await gw.api("/v1/sessions", { method: "POST", json, headers: as(secret) });
	expect(status).toBe(201);
	return body.id as string;
};

describe("one principal's schemas never hold another's requests", () => {
	it("bob's worst output schemas and tool parameters are 400 before pi; alice's GET /v1/sessions answers meanwhile", async () => {
		const hers = await create(alice, { name: "alice's" });
		const his = await create(bob, { name: "bob's" });
		const before = (await gw.api(`/v1/sessions/${his}`, { headers: as(bob) })).body.lastEventId;
		const prompts = Promise.all(
			hostileOutputSchemas.map(([name, outputSchema]) =>
				gw
					.api(`/v1/sessions/${his}/prompt`, {
						method: "POST",
						json: { message: "echo: []", outputSchema },
						headers: as(bob),
					})
					.then((answer) => ({ name, ...answer })),
			),
		);
		const tools = Promise.all(
			hostileToolParameters.map(([name, parameters]) =>
				gw
					.api("/v1/sessions", {
						method: "POST",
						json: { clientTools: [{ name: "lookup", description: "looks up", parameters }] },
						headers: as(bob),
					})
					.then((answer) => ({ name, ...answer })),
			),
		);
		const list = await gw.api("/v1/sessions", { headers: as(alice) });
		expect(list.status).toBe(200);
		expect(list.body.sessions.map((s: { id: string }) => s.id)).toEqual([hers]);
		for (const { name, status, body } of await prompts) {
			expect({ name, status, code: body.code }).toEqual({ name, status: 400, code: "invalid_output_schema" });
			expect(body.detail).toMatch(/over the \d+ allowed|refers to itself without end/);
		}
		for (const { name, status, body } of await tools) {
			expect({ name, status, code: body.code }).toEqual({ name, status: 400, code: "invalid_input" });
			expect(JSON.stringify(body)).toMatch(/over the \d+ allowed|patterns are not supported/);
		}
		// Nothing reached pi: bob's session logged no event, and he made no other session.
		expect((await gw.api(`/v1/sessions/${his}`, { headers: as(bob) })).body.lastEventId).toBe(before);
		const his2 = (await gw.api("/v1/sessions", { headers: as(bob) })).body.sessions;
		expect(his2.map((s: { id: string }) => s.id)).toEqual([his]);
	});

	it("an answer too large to check ends bob's run with outputError; alice's list answers meanwhile", async () => {
		const { $defs } = anyOfChain(9, { type: "integer" });
		const outputSchema = { type: "array", items: { $ref: "#/$defs/d0" }, $defs };
		const perItem = compileOutputSchema(outputSchema).cost.atDepth[1] as number;
		const answer = Array.from({ length: Math.ceil(maxCheckSteps / perItem) + 1 }, () => 1);
		const his = await create(bob, { name: "bob's run" });
		const run = gw.api(`/v1/sessions/${his}/prompt?wait=60`, {
			method: "POST",
			json: { message: `echo: ${JSON.stringify(answer)}`, outputSchema },
			headers: as(bob),
		});
		expect((await gw.api("/v1/sessions", { headers: as(alice) })).status).toBe(200);
		const { status, body } = await run;
		expect(status).toBe(200);
		expect(body).not.toHaveProperty("output");
		expect(body.outputError).toEqual({
			message: `the JSON is too large to check against this schema (more than ${maxCheckSteps} steps: fewer or shorter values)`,
			attempts: 3,
		});
	});
});
