import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, run, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled, tool } from "@openai/agents";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createKey } from "../../src/http/auth/keys.ts";
import { noPool, startTestGateway, type TestGateway } from "../helpers/gateway.ts";

// Issue 44 item 5: an agent framework that speaks the OpenAI API, unchanged: the OpenAI Agents SDK
// (@openai/agents) drives the gateway's Responses API as its model, with a function tool it runs
// itself (pi's run waits for the result, as for any client tool). Real pi, the demo model.
let gw: TestGateway;
let dir: string;
let key: string;

beforeAll(async () => {
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-agents-"));
	const keysFile = join(dir, "keys.json");
	key = createKey(keysFile, "alice", ["sessions:read", "sessions:write"]).secret;
	gw = await startTestGateway({ ...noPool, keysFile });
	setDefaultOpenAIClient(new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 }));
	setOpenAIAPI("responses");
	setTracingDisabled(true);
});
afterAll(async () => {
	await gw?.stop();
	rmSync(dir, { recursive: true, force: true });
});

describe("the OpenAI Agents SDK against the gateway", () => {
	it("runs an agent whose tool the SDK calls, and reads the final output", async () => {
		const asked: string[] = [];
		const lookupPrice = tool({
			name: "lookup_price",
			description: "The price of a product in EUR, by its SKU",
			parameters: z.object({ sku: z.string() }),
			execute: async ({ sku }) => {
				asked.push(sku);
				return `${sku} costs 12 EUR`;
			},
		});
		const agent = new Agent({
			name: "pricer",
			instructions: "Answer with the price the tool gives.",
			model: "pi-gateway-demo/demo",
			tools: [lookupPrice],
		});
		const result = await run(agent, 'tool: lookup_price {"sku": "A-1"}');
		expect(asked).toEqual(["A-1"]);
		expect(result.finalOutput).toBe("A-1 costs 12 EUR");
	});

	it("runs a plain agent, streamed", async () => {
		const agent = new Agent({ name: "echo", instructions: "Repeat.", model: "pi-gateway-demo/demo" });
		const result = await run(agent, "count: 3", { stream: true });
		let text = "";
		for await (const chunk of result.toTextStream()) text += chunk;
		await result.completed;
		expect(text).toBe("1 2 3");
		expect(result.finalOutput).toBe("1 2 3");
	});
});
