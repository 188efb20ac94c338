import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { hasCommand } from "../helpers/host.ts";
import { type ScriptedProvider, startScriptedProvider } from "../helpers/scripted-provider.ts";

// An attacker's review of issue 42 (the agent never holds a secret), two principals in README's
// layout, each agent grepping its own agent folder for what the operator keeps in theirs: a header
// secret in models.json's modelOverrides reached every agent as written, and so did all of the
// operator's folder besides models.json and auth.json (mcp.json with an MCP server's bearer token and
// GITHUB_TOKEN, mcp-auth.json, settings.json's proxy password). And a pooled pi kept the keys of
// when the pool was filled: one rotated out of models.json since went on being used.
const stamp = `${process.pid}-${Date.now()}`;
const canaries = {
	override: `sk-CANARY-OVERRIDE-HDR-4411-${stamp}`,
	mcpBearer: `sk-CANARY-MCP-BEARER-${stamp}`,
	mcpEnv: `ghp_CANARY-MCP-ENV-${stamp}`,
	mcpAuth: `sk-CANARY-MCP-AUTH-${stamp}`,
	proxy: `CANARY-PROXY-PASS-${stamp}`,
};

let root: string;
let provider: ScriptedProvider;
beforeAll(async () => {
	root = mkdtempSync(join(tmpdir(), "pi-gateway-relay-agent-dir-"));
	provider = await startScriptedProvider();
});
afterAll(async () => {
	await provider?.close();
	rmSync(root, { recursive: true, force: true });
});

const model = (id: string) => ({ id, name: id, api: "openai-completions", contextWindow: 128_000, maxTokens: 1024 });
/** A canary split in two, so that no command line holds it whole. */
const grepFor = (values: string[]) => values.map((v) => `-e "${v.slice(0, 10)}""${v.slice(10)}"`).join(" ");

describe.runIf(hasCommand("bwrap"))("what an agent's folder holds of the operator's", () => {
	let gw: TestGateway;
	const keys: Record<string, string> = {};
	beforeAll(async () => {
		const agent = join(root, "agent");
		mkdirSync(join(agent, "prompts"), { recursive: true });
		const openai = {
			baseUrl: provider.baseUrl,
			apiKey: "sk-operator-key",
			models: [model("scripted")],
			modelOverrides: { scripted: { headers: { "X-Org-Secret": canaries.override } } },
		};
		writeFileSync(join(agent, "models.json"), JSON.stringify({ providers: { openai } }));
		const mcpServers = {
			github: {
				url: "https://mcp.example.org/mcp",
				headers: { Authorization: `Bearer ${canaries.mcpBearer}` },
				env: { GITHUB_TOKEN: canaries.mcpEnv },
			},
		};
		writeFileSync(join(agent, "mcp.json"), JSON.stringify({ mcpServers }));
		writeFileSync(join(agent, "mcp-auth.json"), JSON.stringify({ github: { access_token: canaries.mcpAuth } }));
		const httpProxy = `http://op:${canaries.proxy}@127.0.0.1:3128`;
		writeFileSync(join(agent, "settings.json"), JSON.stringify({ quietStartup: true, httpProxy }));
		writeFileSync(join(agent, "AGENTS.md"), "The operator's instructions.\n");
		writeFileSync(join(agent, "prompts", "review.md"), "Review the change.\n");
		const keysFile = join(root, "keys.json");
		for (const name of ["alice", "bob"])
			keys[name] = createKey(keysFile, name, ["sessions:read", "sessions:write"]).secret;
		gw = await startTestGateway({ keysFile, piAgentDir: agent, warmPool: 0 });
	});
	afterAll(() => gw?.stop());

	it("holds no secret of theirs, for either principal, and the model still gets its header", async () => {
		for (const name of ["alice", "bob"]) {
			const headers = { authorization: `Bearer ${keys[name]}` };
			const created = await gw.api("/v1/sessions", {
				method: "POST",
				json: { provider: "openai", model: "scripted" },
				headers,
			});
			expect(created.status).toBe(201);
			const id = created.body.id;
			const grep = `grep -rlsF ${grepFor(Object.values(canaries))} "$PI_CODING_AGENT_DIR" | sed "s/^/found: /"`;
			const look = await gw.api(`/v1/sessions/${id}/bash`, {
				method: "POST",
				json: { command: `${grep}; cd "$PI_CODING_AGENT_DIR" && ls -A && cat settings.json` },
				headers,
			});
			const output = look.body.output as string;
			expect(output).not.toContain("found: ");
			const listed = output.split("\n");
			// What pi needs: its settings (the proxy left out), instructions, prompts; the relay's two files.
			for (const entry of ["AGENTS.md", "prompts", "settings.json", "models.json", "auth.json"])
				expect(listed).toContain(entry);
			for (const entry of ["mcp.json", "mcp-auth.json"]) expect(listed).not.toContain(entry);
			expect(output).toContain('"quietStartup": true');
			expect(output).not.toContain("httpProxy");
			// The relay puts the override's header back on the way out.
			const run = await gw.api(`/v1/sessions/${id}/prompt?wait=600`, {
				method: "POST",
				json: { message: "hello" },
				headers,
			});
			expect(run.body.text).toBe("echo: hello");
			expect(provider.requests.at(-1)?.headers["x-org-secret"]).toBe(canaries.override);
		}
	});
});

describe.runIf(hasCommand("bwrap"))("a pooled pi handed to a session", () => {
	let gw: TestGateway;
	let agent: string;
	const keyOld = `sk-rotated-out-${stamp}`;
	const keyNew = `sk-rotated-in-${stamp}`;
	const write = (apiKey: string | undefined) =>
		writeFileSync(
			join(agent, "models.json"),
			JSON.stringify({
				providers: { p: { baseUrl: provider.baseUrl, api: "openai-completions", apiKey, models: [model("m")] } },
			}),
		);
	beforeAll(async () => {
		agent = join(root, "pool-agent");
		mkdirSync(agent);
		write(keyOld);
		// A plain create (`{}`) is served from the pool: its default provider is the operator's p.
		gw = await startTestGateway({ piAgentDir: agent, warmPool: 1, provider: "p", model: "m" });
		await until(() => gw.registry.pool?.readyCount === 1, 30_000);
	});
	afterAll(() => gw?.stop());

	it("calls with the keys models.json holds now, not those of when the pool was filled", {
		timeout: 120_000,
	}, async () => {
		const pooled = new Set(gw.registry.pool?.readyPids);
		write(keyNew);
		const created = await gw.api("/v1/sessions", { method: "POST", json: {} });
		expect(created.status).toBe(201);
		// The same pi (what it read of models.json, placeholders, did not change): its relay has the new key.
		expect(pooled.has(created.body.pid)).toBe(true);
		const run = await gw.api(`/v1/sessions/${created.body.id}/prompt?wait=600`, {
			method: "POST",
			json: { message: "hello" },
		});
		expect(run.body.text).toBe("echo: hello");
		expect(provider.requests.at(-1)?.headers.authorization).toBe(`Bearer ${keyNew}`);

		// The key removed: the pooled pi (filled with the new key) is not handed out, nor is the key used.
		await until(() => gw.registry.pool?.readyCount === 1, 30_000);
		const refilled = new Set(gw.registry.pool?.readyPids);
		write(undefined);
		const before = provider.requests.length;
		const after = await gw.api("/v1/sessions", { method: "POST", json: {} });
		expect(after.status).toBe(201);
		expect(refilled.has(after.body.pid)).toBe(false);
		await gw.api(`/v1/sessions/${after.body.id}/prompt?wait=600`, { method: "POST", json: { message: "hello" } });
		const sent = JSON.stringify(provider.requests.slice(before).map((r) => r.headers));
		expect(sent).not.toContain(keyNew);
	});
});
