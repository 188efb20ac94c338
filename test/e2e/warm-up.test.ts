import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { apiChunk, chunksDir } from "../../extensions/warm-up.ts";
import { parseConfig } from "../../src/config.ts";
import { bundledPiCli, planSpawn, warmUpPath } from "../../src/sessions/spawn.ts";
import { fixtures, until } from "../helpers/gateway.ts";

// pi imports the code for a model's API at the first prompt that needs it; extensions/warm-up.ts
// imports it once the session is up. Real pi, no prompt sent: what Node loaded is read off a
// load hook (test/fixtures/log-chunk-loads.mjs).
const root = mkdtempSync(join(tmpdir(), "pi-gateway-warm-up-"));
const children: ChildProcess[] = [];
afterAll(() => {
	for (const child of children) child.kill("SIGKILL");
	rmSync(root, { recursive: true, force: true });
});

/** A pi agent folder whose default model speaks `openai-completions` (never asked: no prompt is sent). */
function agentDir(): string {
	const dir = mkdtempSync(join(root, "agent-"));
	const model = { id: "m", name: "m", contextWindow: 128_000, maxTokens: 1024 };
	const providers = {
		p: { baseUrl: "http://127.0.0.1:9/v1", api: "openai-completions", apiKey: "k", models: [model] },
	};
	writeFileSync(join(dir, "models.json"), JSON.stringify({ providers }));
	writeFileSync(join(dir, "settings.json"), JSON.stringify({ defaultProvider: "p", defaultModel: "m" }));
	return dir;
}

/** Starts pi in RPC mode (with or without the warm-up) and collects the chunks Node loads. */
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
	let out = "";
	child.stderr?.on("data", (data: Buffer) => {
		for (const line of data.toString().split("\n")) if (line.startsWith("chunk-loaded ")) loaded.push(line.slice(13));
	});
	child.stdout?.on("data", (data: Buffer) => {
		out += data.toString();
	});
	// Answered once pi has started its session (extensions loaded, session_start sent).
	child.stdin?.write(`${JSON.stringify({ type: "get_state", id: "s" })}\n`);
	return { child, loaded, ready: () => out.includes('"id":"s"') };
}

const chunk = apiChunk(readdirSync(chunksDir(bundledPiCli()) as string), "openai-completions") as string;

describe("the warm-up extension", () => {
	it("finds the chunk pi's own lazy import names, for the installed pi", () => {
		expect(chunk).toMatch(/^openai-completions-[A-Z0-9]{8}\.js$/);
		const dir = chunksDir(bundledPiCli()) as string;
		const importers = readdirSync(dir).filter((name) =>
			readFileSync(join(dir, name), "utf8").includes(`import("./${chunk}")`),
		);
		// The same file by the same URL: Node's module cache hands pi what the warm-up imported.
		expect(importers.length).toBeGreaterThan(0);
		expect(apiChunk(readdirSync(dir), "anthropic-messages")).toMatch(/^anthropic-messages-[A-Z0-9]{8}\.js$/);
		// Nothing but an API pi speaks (a models.json is the agent's to write): no other chunk of the
		// bundle (its CLI is one, named as an API chunk is), no prefix match, no path.
		expect(readdirSync(dir).some((name) => /^cli-[A-Z0-9]{8}\.js$/.test(name))).toBe(true);
		expect(apiChunk(readdirSync(dir), "cli")).toBeUndefined();
		expect(apiChunk(readdirSync(dir), "openai")).toBeUndefined();
		expect(apiChunk(["..-ABCDEFGH.js"], "..")).toBeUndefined();
	});

	it("has pi load the session model's API before any prompt; without it pi does not", async () => {
		const warm = startPi(true);
		const cold = startPi(false);
		await until(() => warm.loaded.includes(chunk), 30_000);
		await until(() => cold.ready(), 30_000);
		// The cold pi is up and idle (it answered): it has not loaded the chunk, and will not until a prompt.
		await new Promise((resolve) => setTimeout(resolve, 500));
		expect(cold.loaded).not.toContain(chunk);
		expect(cold.loaded.length).toBeGreaterThan(0);
	}, 60_000);

	it("is loaded into every pi the gateway starts in README's layout", () => {
		const config = parseConfig({ dataDir: join(root, "data") });
		mkdirSync(config.workspaceRoot, { recursive: true });
		const plan = planSpawn(config, { persist: true }, { id: "ses_warmuptest1" });
		expect(plan.args).toContain(warmUpPath);
	});
});
