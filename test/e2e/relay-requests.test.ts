import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getBuiltinModels } from "@earendil-works/pi-ai/providers/all";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/gateway.ts";
import {
	type ScriptedOverride,
	type ScriptedProvider,
	scriptedUsage,
	startScriptedProvider,
} from "../helpers/scripted-provider.ts";

// An attacker's review from inside the sandbox (issue 42): a tool's own calls through the relay
// ($B = http://127.0.0.1:4317) that the budget counted as almost nothing. Gemini's usageMetadata was
// never read (70,001 tokens counted as about 80), the price came from the first "model" anywhere in
// the body (a nested decoy priced o3-pro as gpt-5-nano, a Gemini call as a free gemma), and
// `background: true` ran a responses call after it had ended, billed unseen. README's layout, real
// pi, a scripted provider on 127.0.0.1 answering the tool's calls as OpenAI and Google would.
let root: string;
let gw: TestGateway;
let provider: ScriptedProvider;
const saved = { openai: process.env.OPENAI_API_KEY, gemini: process.env.GEMINI_API_KEY };

const gemini: ScriptedOverride = (_body, req, res) => {
	if (!(req.url ?? "").startsWith("/v1beta/models/gemini-2.5-pro:streamGenerateContent")) return false;
	res.writeHead(200, { "content-type": "text/event-stream" });
	for (const [candidates, total] of [
		[1, 2],
		[70_000, 70_001],
	])
		res.write(
			`data: ${JSON.stringify({ candidates: [{ content: { parts: [{ text: "x" }], role: "model" } }], usageMetadata: { promptTokenCount: 1, candidatesTokenCount: candidates, totalTokenCount: total } })}\r\n\r\n`,
		);
	res.end();
	return true;
};
const responses: ScriptedOverride = (body, req, res) => {
	if (req.url !== "/v1/responses") return false;
	res.writeHead(200, { "content-type": "application/json" });
	// OpenAI answers a dated snapshot; a background call at once, queued, without usage.
	const usage = body?.background ? null : { input_tokens: 1000, output_tokens: 1000, total_tokens: 2000 };
	res.end(JSON.stringify({ id: "resp_1", object: "response", model: "o3-pro-2025-06-10", status: "queued", usage }));
	return true;
};

beforeAll(async () => {
	root = mkdtempSync(join(tmpdir(), "pi-gateway-relay-requests-"));
	provider = await startScriptedProvider((body, req, res) => gemini(body, req, res) || responses(body, req, res));
	const agent = join(root, "agent");
	mkdirSync(agent);
	const model = {
		id: "scripted",
		name: "scripted",
		api: "openai-completions",
		contextWindow: 128_000,
		maxTokens: 1024,
	};
	const providers = {
		// Built-in providers (pi-ai's prices) moved to the scripted server; "scripted" has no price.
		openai: { baseUrl: provider.baseUrl, models: [model] },
		google: { baseUrl: `http://127.0.0.1:${provider.port}/v1beta` },
	};
	writeFileSync(join(agent, "models.json"), JSON.stringify({ providers }));
	process.env.OPENAI_API_KEY = `sk-relay-requests-${process.pid}`;
	process.env.GEMINI_API_KEY = `gemini-relay-requests-${process.pid}`;
	gw = await startTestGateway({ piAgentDir: agent });
});
afterAll(async () => {
	await gw?.stop();
	await provider?.close();
	for (const [name, value] of [
		["OPENAI_API_KEY", saved.openai],
		["GEMINI_API_KEY", saved.gemini],
	] as const)
		if (value === undefined) delete process.env[name];
		else process.env[name] = value;
	rmSync(root, { recursive: true, force: true });
});

const price = (provider: "openai" | "google", id: string) => {
	const cost = getBuiltinModels(provider).find((m) => m.id === id)?.cost;
	if (!cost) throw new Error(`no price for ${provider}/${id}`);
	return cost;
};
/** pi's own two calls of a run (a tool call, the answer), "scripted" charged at OpenAI's highest prices. */
const piCalls = () => {
	const top = (field: "input" | "output") => Math.max(...getBuiltinModels("openai").map((m) => m.cost[field]));
	return (2 * (scriptedUsage.prompt_tokens * top("input") + scriptedUsage.completion_tokens * top("output"))) / 1e6;
};

/** Runs `command` with pi's bash tool in a new session with a cost budget; its output and the budget after. */
async function tool(command: string) {
	const id = await gw.session({ provider: "openai", model: "scripted", budget: { maxCostUsd: 1000 } });
	const run = await gw.api(`/v1/sessions/${id}/prompt?wait=600`, {
		method: "POST",
		json: { message: `bash: ${command}` },
	});
	expect(run.status).toBe(200);
	const budget = (await gw.api(`/v1/sessions/${id}/budget`)).body;
	return { text: String(run.body.text), budget };
}

describe("a tool's own model calls through the relay are counted at what they cost", () => {
	it("a Gemini stream counts its usageMetadata, at the price of the model in its path, not a nested free one", async () => {
		const body = JSON.stringify({
			contents: [{ role: "user", parts: [{ text: "hi" }] }],
			cachedContent: { model: "gemma-4-31b-it" },
		});
		const url = "http://127.0.0.1:4317/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse";
		const { text, budget } = await tool(
			`curl -s -o /dev/null -w '%{http_code}' "${url}" -H "x-goog-api-key: $GEMINI_API_KEY" -H 'content-type: application/json' -d '${body}'`,
		);
		expect(text).toContain("200");
		expect(budget.usedTokens).toBe(2 * scriptedUsage.total_tokens + 70_001);
		const cost = price("google", "gemini-2.5-pro");
		expect(budget.usedCostUsd).toBeCloseTo(piCalls() + (1 * cost.input + 70_000 * cost.output) / 1e6, 9);
	});

	it("a responses call with a decoy model nested in it is priced at its top-level model (o3-pro, answered as a snapshot)", async () => {
		const body = JSON.stringify({ metadata: { model: "gpt-5-nano" }, model: "o3-pro", input: "hi" });
		const { text, budget } = await tool(
			`curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:4317/openai/responses -H "authorization: Bearer $OPENAI_API_KEY" -H 'content-type: application/json' -d '${body}'`,
		);
		expect(text).toContain("200");
		const cost = price("openai", "o3-pro");
		expect(budget.usedCostUsd).toBeCloseTo(piCalls() + (1000 * cost.input + 1000 * cost.output) / 1e6, 9);
	});

	it("refuses background responses calls: none reaches the provider", async () => {
		const before = provider.requests.filter((r) => r.path === "/v1/responses").length;
		const body = JSON.stringify({ model: "o3-pro", background: true, input: "hi" });
		const { text } = await tool(
			`for i in 1 2 3 4 5; do curl -s http://127.0.0.1:4317/openai/responses -H "authorization: Bearer $OPENAI_API_KEY" -H 'content-type: application/json' -d '${body}'; echo; done`,
		);
		expect(text.match(/"code":"relay_background_refused"/g)).toHaveLength(5);
		expect(provider.requests.filter((r) => r.path === "/v1/responses")).toHaveLength(before);
	});
});
