import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getBuiltinModels } from "@earendil-works/pi-ai/providers/all";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { relayLimits } from "../../src/sessions/relay/server.ts";
import { startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import {
	type ScriptedOverride,
	type ScriptedProvider,
	scriptedUsage,
	startScriptedProvider,
} from "../helpers/scripted-provider.ts";

// Issue 42 item 2 with per-run `limits`: a sandboxed pi's calls are counted at the relay, and a
// run's limits count them as the session's budget does (one source per call). A call pi never
// reports (a tool's own call through the relay) counts against the run as it does against the
// budget. README's layout, real pi, a scripted provider on 127.0.0.1.
let root: string;
let gw: TestGateway;
let provider: ScriptedProvider;
const savedKey = process.env.OPENAI_API_KEY;

beforeAll(async () => {
	root = mkdtempSync(join(tmpdir(), "pi-gateway-relay-limits-"));
	provider = await startScriptedProvider(raw);
	const agent = join(root, "agent");
	mkdirSync(agent);
	const model = (id: string) => ({ id, name: id, api: "openai-completions", contextWindow: 128_000, maxTokens: 1024 });
	const providers = {
		// A built-in provider (pi-ai's prices) moved to the scripted server; "scripted" has no price.
		openai: { baseUrl: provider.baseUrl, models: [model("scripted")] },
		// A provider of the operator's own with no price at all.
		local: { baseUrl: provider.baseUrl, api: "openai-completions", apiKey: "sk-local", models: [model("unpriced")] },
	};
	writeFileSync(join(agent, "models.json"), JSON.stringify({ providers }));
	process.env.OPENAI_API_KEY = `sk-relay-limits-${process.pid}`;
	gw = await startTestGateway({ piAgentDir: agent });
});
afterAll(async () => {
	await gw?.stop();
	await provider?.close();
	if (savedKey === undefined) delete process.env.OPENAI_API_KEY;
	else process.env.OPENAI_API_KEY = savedKey;
	rmSync(root, { recursive: true, force: true });
});

const perCall = scriptedUsage.total_tokens;

/** The provider's answers to a tool's own calls (one user message `raw: <what>`), as the test scripts them. */
const held: ServerResponse[] = [];
let trickleClosed = false;
const noUsageStream = ["a", "b", "c"]
	.map(
		(text) =>
			`data: ${JSON.stringify({ object: "chat.completion.chunk", choices: [{ delta: { content: text } }] })}\n\n`,
	)
	.join("")
	.concat("data: [DONE]\n\n");
const raw: ScriptedOverride = (body, _req, res) => {
	const what = body?.messages?.length === 1 ? String(body.messages[0].content) : "";
	if (what === "raw: trickle") {
		// A stream without a figure that runs until its caller goes.
		res.writeHead(200, { "content-type": "text/event-stream" });
		const timer = setInterval(
			() => res.write(`data: ${JSON.stringify({ choices: [{ delta: { content: "t" } }] })}\n\n`),
			20,
		);
		res.on("close", () => {
			clearInterval(timer);
			trickleClosed = true;
		});
	} else if (what === "raw: no usage") {
		res.writeHead(200, { "content-type": "text/event-stream" });
		res.end(noUsageStream);
	} else if (what === "raw: hold") held.push(res);
	else return false;
	return true;
};

/** A tool's command that POSTs `content` as a chat completion to the relay, with the key's placeholder. */
const relayCall = (content: string, curlFlags = "") => {
	const body = JSON.stringify({ model: "scripted", stream: true, messages: [{ role: "user", content }] });
	const command = `curl -s ${curlFlags} -X POST http://127.0.0.1:4317/openai/chat/completions -H "authorization: Bearer $OPENAI_API_KEY" -H "content-type: application/json" -d '${body}'`;
	return { command, bytes: Buffer.byteLength(body) };
};

const budgetOf = async (id: string) => (await gw.api(`/v1/sessions/${id}/budget`)).body;

describe("a run's limits count relayed calls as the budget does", () => {
	it("a tool's own model call through the relay counts against the run's maxTokens", async () => {
		const id = await gw.session({ provider: "openai", model: "scripted" });
		const body = JSON.stringify({ model: "scripted", messages: [{ role: "user", content: "from a tool" }] });
		const curl = `curl -s -o /dev/null -X POST http://127.0.0.1:4317/openai/chat/completions -H "authorization: Bearer $OPENAI_API_KEY" -H "content-type: application/json" -d '${body}'; echo called`;
		// Three calls: pi's tool call, the tool's own, pi's answer (15 tokens each); pi reports two.
		const run = await gw.api(`/v1/sessions/${id}/prompt?wait=600`, {
			method: "POST",
			json: { message: `bash: ${curl}`, limits: { maxTokens: 2 * perCall + 10 } },
		});
		expect(run.status).toBe(200);
		expect(provider.requests.filter((r) => r.body?.messages?.[0]?.content === "from a tool")).toHaveLength(1);
		const budget = (await gw.api(`/v1/sessions/${id}/budget`)).body;
		expect(budget.usedTokens).toBe(3 * perCall);
		expect(run.body.limit).toEqual({ kind: "tokens", allowed: 2 * perCall + 10, used: 3 * perCall });
	});
});

// Budget holes an attacker's review found in the relay (issue 42): calls a tool makes through it
// that were counted 0 or that all passed the budget's check at once.
describe("the relay counts a tool's calls however they end", () => {
	it("a call whose caller hangs up mid-stream is counted (an estimate: no figure came)", async () => {
		const id = await gw.session({ provider: "openai", model: "scripted" });
		const call = relayCall("raw: trickle", "-N");
		const run = await gw.api(`/v1/sessions/${id}/prompt?wait=600`, {
			method: "POST",
			json: { message: `bash: ${call.command} | head -c 100 > /dev/null; echo cut` },
		});
		expect(run.status).toBe(200);
		// The tool's hang-up reached the provider: the relay cut the stream there.
		await until(() => trickleClosed);
		// pi's two calls, 15 tokens each, and the tool's: its request's bytes / 4 and some output.
		const used = await until(async () => {
			const { usedTokens } = await budgetOf(id);
			return usedTokens > 2 * perCall && usedTokens;
		});
		expect(used).toBeGreaterThan(2 * perCall + Math.ceil(call.bytes / 4));
	});

	it("a stream without a usage figure counts the request's and the answer's bytes / 4", async () => {
		const id = await gw.session({ provider: "openai", model: "scripted" });
		const call = relayCall("raw: no usage", "-o /dev/null");
		const run = await gw.api(`/v1/sessions/${id}/prompt?wait=600`, {
			method: "POST",
			json: { message: `bash: ${call.command}; echo called` },
		});
		expect(run.status).toBe(200);
		// The request as the provider got it: the relay asked for the usage (which it did not send).
		const sent = provider.requests.find((r) => r.body?.messages?.[0]?.content === "raw: no usage")?.body;
		expect(sent.stream_options).toEqual({ include_usage: true });
		const bytes = Buffer.byteLength(JSON.stringify(sent));
		expect(bytes).toBeGreaterThan(call.bytes);
		const estimate = Math.ceil(bytes / 4) + Math.ceil(Buffer.byteLength(noUsageStream) / 4);
		expect((await budgetOf(id)).usedTokens).toBe(2 * perCall + estimate);
	});

	it("a session's relay carries a few calls at once: the rest are 429, so parallel calls overshoot by that few", async () => {
		const id = await gw.session({ provider: "openai", model: "scripted" });
		const calls = 2 * relayLimits.calls;
		const one = relayCall("raw: hold", "-o /dev/null -w '%{http_code}\\n'").command;
		const command = `for i in $(seq ${calls}); do (${one} >> codes) & done; wait; echo all`;
		const run = gw.api(`/v1/sessions/${id}/prompt?wait=600`, { method: "POST", json: { message: `bash: ${command}` } });
		const codes = join(await gw.folder(id), "codes");
		const lines = () => (existsSync(codes) ? readFileSync(codes, "utf8").trim().split("\n").filter(Boolean) : []);
		// Each call is either held at the provider or answered by the relay.
		await until(() => held.length + lines().length === calls, 60_000);
		expect(held).toHaveLength(relayLimits.calls);
		expect(lines()).toEqual(Array(calls - relayLimits.calls).fill("429"));
		for (const res of held.splice(0)) {
			res.writeHead(200, { "content-type": "application/json" });
			res.end(
				JSON.stringify({ id: "h", object: "chat.completion", model: "scripted", choices: [], usage: scriptedUsage }),
			);
		}
		expect((await run).status).toBe(200);
		expect(lines().sort()).toEqual([
			...Array(relayLimits.calls).fill("200"),
			...Array(calls - relayLimits.calls).fill("429"),
		]);
		expect((await budgetOf(id)).usedTokens).toBe((2 + relayLimits.calls) * perCall);
	}, 120_000);
});

describe("the relay's prices against a cost budget", () => {
	it("charges a model without a price at the highest price its provider knows", async () => {
		const id = await gw.session({ provider: "openai", model: "scripted", budget: { maxCostUsd: 100 } });
		const run = await gw.api(`/v1/sessions/${id}/prompt?wait=600`, { method: "POST", json: { message: "hello" } });
		expect(run.status).toBe(200);
		const top = (field: "input" | "output") => Math.max(...getBuiltinModels("openai").map((m) => m.cost[field]));
		const cost = (scriptedUsage.prompt_tokens * top("input") + scriptedUsage.completion_tokens * top("output")) / 1e6;
		expect(cost).toBeGreaterThan(0);
		expect((await budgetOf(id)).usedCostUsd).toBeCloseTo(cost, 9);
	});

	it("refuses calls to a provider without any price when the budget is a cost alone; a token limit lets them pass", async () => {
		const id = await gw.session({ provider: "local", model: "unpriced", budget: { maxCostUsd: 1 } });
		const before = provider.requests.length;
		const refused = await gw.api(`/v1/sessions/${id}/prompt?wait=600`, { method: "POST", json: { message: "hi" } });
		expect(refused.status).toBe(200);
		expect(JSON.stringify(refused.body)).toContain("budget_unpriced");
		expect(provider.requests.length).toBe(before);
		const put = await gw.api(`/v1/sessions/${id}/budget`, { method: "PUT", json: { maxCostUsd: 1, maxTokens: 1000 } });
		expect(put.status).toBe(200);
		const run = await gw.api(`/v1/sessions/${id}/prompt?wait=600`, { method: "POST", json: { message: "hi" } });
		expect(run.body.text).toBe("echo: hi");
		expect(await budgetOf(id)).toMatchObject({ usedTokens: perCall, usedCostUsd: 0 });
	});
});
