import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";

// protocols-attacker.test.ts's bob, against a gateway with a small per-principal session cap.
let dir: string;
const keys: Record<string, string> = {};
const demo = "pi-gateway-demo/demo";
const as = (secret: string | undefined) => ({ authorization: `Bearer ${secret}` });
const shape = (r: { status: number; body: { error?: { code?: string } } }) => ({
	status: r.status,
	code: r.body.error?.code,
});

// Paused completions (a run waiting for the client's tool results, up to 10 minutes) are sessions
// like any other: counted in bob's share, so his many pauses stall nobody but him.
describe("many paused tool-call completions", () => {
	let small: TestGateway;
	beforeAll(async () => {
		dir = mkdtempSync(join(tmpdir(), "pi-gateway-protocols-pauses-"));
		const keysFile = join(dir, "keys.json");
		const full = ["sessions:read", "sessions:write"] as const;
		keys.alice = createKey(keysFile, "alice", [...full]).secret;
		keys.bob = createKey(keysFile, "bob", [...full]).secret;
		small = await startTestGateway({ keysFile, maxSessionsPerPrincipal: 2 });
	});
	afterAll(async () => {
		await small?.stop();
		rmSync(dir, { recursive: true, force: true });
	});

	const tools = [{ type: "function", function: { name: "lookup", parameters: { type: "object", properties: {} } } }];
	const complete = (secret: string | undefined, content: string) =>
		small.api("/v1/chat/completions", {
			method: "POST",
			headers: as(secret),
			json: { model: demo, messages: [{ role: "user", content }], tools },
		});

	it("count in bob's sessions: past his share his next is 429, alice's completes", async () => {
		const paused = [await complete(keys.bob, "tool: lookup {}"), await complete(keys.bob, "tool: lookup {}")];
		for (const p of paused) expect(p.body.choices[0].finish_reason).toBe("tool_calls");
		const third = await complete(keys.bob, "echo: third");
		expect(shape(third)).toMatchObject({ status: 429, code: "too_many_sessions" });
		const hers = await complete(keys.alice, "echo: hers");
		expect(hers.body.choices[0].message.content).toBe("hers");
		// Bob answers one: its run ends, its session goes, and his next completion runs.
		const first = paused[0]?.body.choices[0].message;
		const answered = await small.api("/v1/chat/completions", {
			method: "POST",
			headers: as(keys.bob),
			json: {
				model: demo,
				tools,
				messages: [
					{ role: "user", content: "tool: lookup {}" },
					first,
					{ role: "tool", tool_call_id: first.tool_calls[0].id, content: "7" },
				],
			},
		});
		expect(answered.body.choices[0].message.content).toBe("7");
		await until(async () => (await complete(keys.bob, "echo: again")).status === 200);
	});
});
