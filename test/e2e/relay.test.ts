import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/gateway.ts";
import { type ScriptedProvider, startScriptedProvider } from "../helpers/scripted-provider.ts";

// Issue 42 items 1, 2, 3 and 6, in README's layout with real pi: a sandboxed pi holds no provider
// key and has no network; its model calls go through the gateway's relay, which puts the
// operator's keys back (from the gateway's environment and the operator's models.json) and counts
// the usage. Canary keys reach the scripted provider on 127.0.0.1; no tool finds them, and no tool
// reaches the gateway's port, the provider or any other address.
const canaryEnv = `sk-canary-env-${process.pid}-${Date.now()}`;
const canaryModels = `sk-canary-models-${process.pid}-${Date.now()}`;
/** A canary split in two, so that neither a prompt nor a command line holds it whole. */
const split = (canary: string) => [canary.slice(0, 8), canary.slice(8)] as const;

let root: string;
let gw: TestGateway;
let provider: ScriptedProvider;
const savedKey = process.env.OPENAI_API_KEY;

beforeAll(async () => {
	root = mkdtempSync(join(tmpdir(), "pi-gateway-relay-"));
	provider = await startScriptedProvider();
	const agent = join(root, "agent");
	mkdirSync(agent);
	const model = (id: string) => ({ id, name: id, api: "openai-completions", contextWindow: 128_000, maxTokens: 1024 });
	const providers = {
		// A provider of the operator's models.json, its key written there.
		p: { baseUrl: provider.baseUrl, api: "openai-completions", apiKey: canaryModels, models: [model("m")] },
		// A built-in provider, moved to the scripted server: its key comes from the environment.
		openai: { baseUrl: provider.baseUrl, models: [model("scripted")] },
	};
	writeFileSync(join(agent, "models.json"), JSON.stringify({ providers }));
	process.env.OPENAI_API_KEY = canaryEnv;
	gw = await startTestGateway({ piAgentDir: agent });
});
afterAll(async () => {
	await gw?.stop();
	await provider?.close();
	if (savedKey === undefined) delete process.env.OPENAI_API_KEY;
	else process.env.OPENAI_API_KEY = savedKey;
	rmSync(root, { recursive: true, force: true });
});

async function prompt(id: string, message: string) {
	const run = await gw.api(`/v1/sessions/${id}/prompt?wait=600`, { method: "POST", json: { message } });
	expect(run.status).toBe(200);
	return run.body;
}

/** Runs `script` with pi's bash tool (asked for by the scripted model) and returns what it wrote to out.txt. */
async function toolOutput(id: string, script: string): Promise<string> {
	await prompt(id, `bash: { ${script} ; } > out.txt 2>&1`);
	return readFileSync(join(await gw.folder(id), "out.txt"), "utf8");
}

describe("model calls through the relay", () => {
	it("reach the provider with the operator's keys, from models.json and from the environment", async () => {
		const fromFile = await gw.session({ provider: "p", model: "m" });
		expect((await prompt(fromFile, "hello")).text).toBe("echo: hello");
		const last = provider.requests.at(-1);
		expect(last?.headers.authorization).toBe(`Bearer ${canaryModels}`);
		expect(last?.path).toBe("/v1/chat/completions");

		const fromEnv = await gw.session({ provider: "openai", model: "scripted" });
		expect((await prompt(fromEnv, "hi")).text).toBe("echo: hi");
		expect(provider.requests.at(-1)?.headers.authorization).toBe(`Bearer ${canaryEnv}`);
	});

	// Its grep reads every file the sandbox shows (the host's whole tree, until the view narrows).
	it("leave no key for a tool to find: environment, /proc or any file it can read", { timeout: 600_000 }, async () => {
		const id = await gw.session({ provider: "p", model: "m" });
		const [a1, a2] = split(canaryEnv);
		const [b1, b2] = split(canaryModels);
		const out = await toolOutput(
			id,
			[
				`A="${a1}""${a2}"; B="${b1}""${b2}"`,
				'echo "key=$OPENAI_API_KEY"',
				'env | grep -cF -e "$A" -e "$B"',
				// Every process's environment and command line (read by the shell itself: a grep given the
				// canary would find it in its own command line).
				'n=0; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do t=$( { tr "\\0" "\\n" < "$f"; } 2>/dev/null ); case "$t" in *"$A"*|*"$B"*) n=$((n+1));; esac; done; echo "$n"',
				// Every file in the sandbox's view but the system's own packages and the kernel's trees.
				'grep -rlsF -e "$A" -e "$B" / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr --exclude-dir=lib --exclude-dir=lib64 --exclude-dir=bin --exclude-dir=sbin | sed "s/^/found: /"; echo searched',
			].join("; "),
		);
		expect(out).toContain("key=pi-gateway-placeholder-env-OPENAI_API_KEY");
		// Two counts of 0, and no file found.
		expect(out.split("\n").filter((l) => l === "0")).toHaveLength(2);
		expect(out).toContain("searched");
		expect(out).not.toContain("found: ");
	});

	it("while the tools reach no address: not the gateway, not the provider, not the metadata service", async () => {
		const id = await gw.session({ provider: "p", model: "m" });
		const gatewayPort = new URL(gw.url).port;
		const probe = (host: string, port: string | number, name: string) =>
			`(exec 3<>/dev/tcp/${host}/${port}) 2>/dev/null && echo "${name} open" || echo "${name} closed"`;
		const out = await toolOutput(
			id,
			[
				probe("127.0.0.1", gatewayPort, "gateway"),
				probe("127.0.0.1", provider.port, "provider"),
				probe("169.254.169.254", 80, "metadata"),
				probe("10.0.0.1", 80, "private"),
				// The control: the relay's own forwarder, on the sandbox's loopback, answers.
				probe("127.0.0.1", 4317, "relay"),
			].join("; "),
		);
		for (const name of ["gateway", "provider", "metadata", "private"]) expect(out).toContain(`${name} closed`);
		expect(out).toContain("relay open");
		// And the model still answered: the tool's result went back to it.
		expect(provider.requests.at(-1)?.body?.messages?.at(-1)?.role).toBe("tool");
	});

	// An attacker's review: a tool's curl to the relay got the real key back in an upstream's echo of
	// a query value or a header, and reached any method and path of the account.
	it("give a tool's curl no key back and no call but the model API's", async () => {
		const id = await gw.session({ provider: "openai", model: "scripted" });
		const relay = "http://127.0.0.1:4317/openai";
		const code = (args: string) => `curl -s -o /dev/null --path-as-is -w '%{http_code}\\n' ${args}`;
		const auth = `-H "Authorization: Bearer $OPENAI_API_KEY"`;
		const out = await toolOutput(
			id,
			[
				code(`${auth} "${relay}/models?limit=$OPENAI_API_KEY"`),
				code(`${auth} -H "x-request-id: $OPENAI_API_KEY" ${relay}/models`),
				code(`${auth} -X DELETE ${relay}/files/file-abc`),
				code(`${auth} -X POST ${relay}/batches`),
				code(`${auth} ${relay}/%2e%2e/%2e%2e/admin/anything`),
			].join("; "),
		);
		expect(out.trim().split("\n")).toEqual(["400", "400", "403", "403", "400"]);
		const sent = JSON.stringify(provider.requests.map((r) => [r.path, r.headers]));
		for (const word of ["limit=", "x-request-id", "files", "batches", "admin"]) expect(sent).not.toContain(word);
	});

	it("count usage at the relay once, and refuse a call made once the budget is spent", async () => {
		const id = await gw.session({ provider: "p", model: "m", budget: { maxTokens: 1 } });
		const before = provider.requests.length;
		// The first call asks for a tool (15 tokens: the budget is spent); the call after the tool's
		// result is refused at the relay, and pi shows it as a failed turn.
		const run = await prompt(id, "bash: echo hi");
		expect(provider.requests.length - before).toBe(1);
		expect(JSON.stringify(run)).toContain("budget_exhausted");
		const budget = await gw.api(`/v1/sessions/${id}/budget`);
		expect(budget.body.usedTokens).toBe(15);
		expect(budget.body.exhausted).toBe("tokens");
	});

	it("leave the demo model (in pi's process) working and counted from pi's reports", async () => {
		const id = await gw.session({ budget: { maxTokens: 1000 } });
		expect((await prompt(id, "count: 3")).text).toContain("3");
		expect((await gw.api(`/v1/sessions/${id}/budget`)).body.usedTokens).toBeGreaterThan(0);
	});
});
