import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/gateway.ts";
import { type ScriptedProvider, scriptedUsage, startScriptedProvider } from "../helpers/scripted-provider.ts";

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
	provider = await startScriptedProvider();
	const agent = join(root, "agent");
	mkdirSync(agent);
	const model = {
		id: "scripted",
		name: "scripted",
		api: "openai-completions",
		contextWindow: 128_000,
		maxTokens: 1024,
	};
	writeFileSync(
		join(agent, "models.json"),
		JSON.stringify({ providers: { openai: { baseUrl: provider.baseUrl, models: [model] } } }),
	);
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
