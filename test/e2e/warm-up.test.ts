import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ScriptedModel, startScriptedModel } from "../../bench/scripted-openai.ts";
import { apiChunk, chunksDir, warmedApis } from "../../extensions/warm-up.ts";
import { parseConfig } from "../../src/config/config.ts";
import { bundledPiCli, planSpawn, warmUpPath } from "../../src/sessions/process/spawn.ts";
import { fixtures, until } from "../helpers/gateway.ts";

// pi imports the code for a model's API at the first prompt that needs it; extensions/warm-up.ts,
// in a pooled pi, imports it once the session is up. Real pi and a scripted OpenAI-compatible model
// on 127.0.0.1; what Node loaded, and how often, is read off a load hook
// (test/fixtures/log-chunk-loads.mjs).
const root = mkdtempSync(join(tmpdir(), "pi-gateway-warm-up-"));
const children: ChildProcess[] = [];
let model: ScriptedModel;
beforeAll(async () => {
	model = await startScriptedModel();
});
afterAll(async () => {
	for (const child of children) child.kill("SIGKILL");
	await model?.close();
	rmSync(root, { recursive: true, force: true });
});

const dir = chunksDir(bundledPiCli()) as string;
const chunkUrl = (api: string) => pathToFileURL(join(dir, apiChunk(readdirSync(dir), api) as string)).href;

/** A pi agent folder: the scripted model (openai-completions) by default, and one that speaks anthropic-messages. */
function agentDir(): string {
	const agent = mkdtempSync(join(root, "agent-"));
	const m = (id: string) => ({ id, name: id, contextWindow: 128_000, maxTokens: 1024 });
	const providers = {
		p: { baseUrl: model.baseUrl, api: "openai-completions", apiKey: "k", models: [m("m")] },
		q: { baseUrl: "http://127.0.0.1:9", api: "anthropic-messages", apiKey: "k", models: [m("n")] },
	};
	writeFileSync(join(agent, "models.json"), JSON.stringify({ providers }));
	writeFileSync(join(agent, "settings.json"), JSON.stringify({ defaultProvider: "p", defaultModel: "m" }));
	return agent;
}

/** pi in RPC mode (with or without the warm-up); collects the chunk URLs Node loads and pi's events. */
function startPi(withWarmUp: boolean) {
	const args = ["--import", join(fixtures, "log-chunk-loads.mjs"), bundledPiCli(), "--mode", "rpc", "--no-session"];
	if (withWarmUp) args.push("-e", warmUpPath);
	const child = spawn(process.execPath, args, {
		cwd: root,
		env: { ...process.env, PI_CODING_AGENT_DIR: agentDir(), PI_OFFLINE: "1" },
		stdio: ["pipe", "pipe", "pipe"],
	});
	children.push(child);
	const loaded: string[] = [];
	const events: { type: string; id?: string }[] = [];
	child.stderr?.on("data", (data: Buffer) => {
		for (const line of data.toString().split("\n")) if (line.startsWith("chunk-loaded ")) loaded.push(line.slice(13));
	});
	let out = "";
	child.stdout?.on("data", (data: Buffer) => {
		out += data.toString();
		const lines = out.split("\n");
		out = lines.pop() as string;
		for (const line of lines) if (line.startsWith("{")) events.push(JSON.parse(line));
	});
	const send = (command: Record<string, unknown>) => child.stdin?.write(`${JSON.stringify(command)}\n`);
	const answered = (id: string) => events.some((e) => e.type === "response" && e.id === id);
	const count = (url: string) => loaded.filter((u) => u === url).length;
	return { loaded, events, send, answered, count };
}

describe("the warm-up extension", () => {
	it("finds, for every API it warms, the chunk pi's own lazy import names, and nothing else", () => {
		const names = readdirSync(dir);
		const bundle = names.map((name) => readFileSync(join(dir, name), "utf8")).join("\n");
		for (const api of warmedApis) {
			const chunk = apiChunk(names, api);
			expect(chunk, api).toMatch(new RegExp(`^${api}-[A-Z0-9]{8}\\.js$`));
			// The same file by the same URL: Node's module cache hands pi what the warm-up imported.
			expect(bundle, api).toContain(`import("./${chunk}")`);
		}
		// A models.json is the agent's to write: no other chunk of the bundle (its CLI is one, named as
		// an API chunk is), no prefix match, no path.
		expect(names.some((name) => /^cli-[A-Z0-9]{8}\.js$/.test(name))).toBe(true);
		expect(apiChunk(names, "cli")).toBeUndefined();
		expect(apiChunk(names, "openai")).toBeUndefined();
		expect(apiChunk(["..-ABCDEFGH.js"], "..")).toBeUndefined();
	});

	it("has pi load its model's API before any prompt, once: pi's own import at the prompt reuses it", async () => {
		const openai = chunkUrl("openai-completions");
		const warm = startPi(true);
		const cold = startPi(false);
		await until(() => warm.count(openai) === 1, 30_000);
		cold.send({ type: "get_state", id: "s" });
		await until(() => cold.answered("s"), 30_000);
		// Up and idle, without the warm-up: not loaded, until a prompt needs it.
		await new Promise((resolve) => setTimeout(resolve, 500));
		expect(cold.count(openai)).toBe(0);
		expect(cold.loaded.length).toBeGreaterThan(0);
		for (const pi of [warm, cold]) {
			pi.send({ type: "prompt", id: "p", message: "tokens: 3" });
			await until(() => pi.events.some((e) => e.type === "agent_settled"), 30_000);
			expect(pi.count(openai)).toBe(1);
		}
		// A model of another API: its chunk too, without a prompt.
		const anthropic = chunkUrl("anthropic-messages");
		expect(warm.count(anthropic)).toBe(0);
		warm.send({ type: "set_model", id: "m", provider: "q", modelId: "n" });
		await until(() => warm.count(anthropic) === 1, 30_000);
	}, 90_000);

	it("is loaded into the warm pool's pis in README's layout, not into a cold start", () => {
		const config = parseConfig({ dataDir: join(root, "data") });
		mkdirSync(config.workspaceRoot, { recursive: true });
		const cold = planSpawn(config, { persist: true }, { id: "ses_warmuptest1" });
		expect(cold.args).not.toContain(warmUpPath);
		const pooled = planSpawn(config, { persist: true }, { id: "ses_warmuptest2", pooled: true });
		expect(pooled.args).toContain(warmUpPath);
		expect(config.warmPool).toBeGreaterThan(0);
	});
});
