import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startupNotices } from "../../src/app/startup-notices.ts";
import { createKey, setProviderKey } from "../../src/http/auth/keys.ts";
import { startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { hasCommand } from "../helpers/host.ts";
import { type ScriptedProvider, startScriptedProvider } from "../helpers/scripted-provider.ts";

// Issue 42 item 5, in README's layout with real pi: the operator gives alice her own provider keys
// (one in a variable of the gateway's environment, one in a file). The relay sends alice's sessions'
// calls with hers and bob's with the operator's, both at once; carol's key is missing, and her turn
// fails instead of going out on the operator's key. No agent, answer, log or the keys file holds
// alice's keys.
const stamp = `${process.pid}-${Date.now()}`;
const operatorKey = `sk-OPERATOR-canary-${stamp}`;
const aliceEnvKey = `sk-ALICE-env-canary-${stamp}`;
const aliceFileKey = `sk-ALICE-file-canary-${stamp}`;
const saved = { OPENAI_API_KEY: process.env.OPENAI_API_KEY, ALICE_OPENAI_KEY: process.env.ALICE_OPENAI_KEY };

let root: string;
let provider: ScriptedProvider;
let gw: TestGateway;
let keysFile: string;
const keys: Record<string, string> = {};
const logLines: string[] = [];

const model = (id: string) => ({ id, name: id, api: "openai-completions", contextWindow: 128_000, maxTokens: 1024 });

beforeAll(async () => {
	root = mkdtempSync(join(tmpdir(), "pi-gateway-own-keys-"));
	provider = await startScriptedProvider();
	const agent = join(root, "agent");
	mkdirSync(agent);
	// openai keyed by the operator's environment; groq (moved to the scripted server too) by nobody's.
	const providers = {
		openai: { baseUrl: provider.baseUrl, models: [model("scripted")] },
		groq: { baseUrl: provider.baseUrl, api: "openai-completions", models: [model("scripted-groq")] },
	};
	writeFileSync(join(agent, "models.json"), JSON.stringify({ providers }));
	const secrets = join(root, "secrets");
	mkdirSync(secrets, { mode: 0o700 });
	writeFileSync(join(secrets, "alice-groq.key"), `${aliceFileKey}\n`, { mode: 0o600 });
	keysFile = join(root, "keys.json");
	for (const name of ["alice", "bob", "carol"])
		keys[name] = createKey(keysFile, name, ["sessions:read", "sessions:write"]).secret;
	setProviderKey(keysFile, "alice", "openai", "env:ALICE_OPENAI_KEY");
	setProviderKey(keysFile, "alice", "groq", `file:${join(secrets, "alice-groq.key")}`);
	setProviderKey(keysFile, "carol", "openai", `file:${join(secrets, "carol-missing.key")}`);
	process.env.OPENAI_API_KEY = operatorKey;
	process.env.ALICE_OPENAI_KEY = aliceEnvKey;
	gw = await startTestGateway({ keysFile, piAgentDir: agent, warmPool: 0, logLines });
});
afterAll(async () => {
	await gw?.stop();
	await provider?.close();
	for (const [name, value] of Object.entries(saved))
		if (value === undefined) delete process.env[name];
		else process.env[name] = value;
	rmSync(root, { recursive: true, force: true });
});

const as = (name: string) => ({ authorization: `Bearer ${keys[name]}` });

async function session(name: string, body: Record<string, unknown>): Promise<string> {
	const created = await gw.api("/v1/sessions", { method: "POST", json: body, headers: as(name) });
	expect(created.status).toBe(201);
	return created.body.id;
}

async function prompt(name: string, id: string, message: string) {
	const run = await gw.api(`/v1/sessions/${id}/prompt?wait=600`, {
		method: "POST",
		json: { message },
		headers: as(name),
	});
	expect(run.status).toBe(200);
	return run.body;
}

/** The key the provider got with the call whose last user message was `text`. */
function keyFor(text: string): string | undefined {
	const found = provider.requests.find((r) =>
		(r.body?.messages ?? []).some((m: any) => m.role === "user" && JSON.stringify(m.content).includes(text)),
	);
	return found?.headers.authorization as string | undefined;
}

/** A tool of `name`'s session looks for `values` in its environment, every process's /proc and every file it can read. */
async function toolFinds(name: string, id: string, values: string[]): Promise<string> {
	const parts = values.map((v) => `"${v.slice(0, 12)}""${v.slice(12)}"`);
	const vars = parts.map((p, i) => `K${i}=${p}`).join("; ");
	const patterns = values.map((_, i) => `-e "$K${i}"`).join(" ");
	const cases = values.map((_, i) => `*"$K${i}"*`).join("|");
	const script = [
		vars,
		`env | grep -cF ${patterns}`,
		`n=0; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do t=$( { tr "\\0" "\\n" < "$f"; } 2>/dev/null ); case "$t" in ${cases}) n=$((n+1));; esac; done; echo "$n"`,
		`grep -rlsF ${patterns} / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr --exclude-dir=lib --exclude-dir=lib64 --exclude-dir=bin --exclude-dir=sbin | sed "s/^/found: /"; echo searched`,
	].join("; ");
	await prompt(name, id, `bash: { ${script} ; } > out.txt 2>&1`);
	const folder = (await gw.api(`/v1/sessions/${id}`, { headers: as(name) })).body.cwd as string;
	return readFileSync(join(folder, "out.txt"), "utf8");
}

describe.runIf(hasCommand("bwrap"))("a principal's own provider keys", () => {
	it("go with alice's calls only: bob's, at the same time, carry the operator's", { timeout: 600_000 }, async () => {
		const [alice, bob] = await Promise.all([
			session("alice", { provider: "openai", model: "scripted" }),
			session("bob", { provider: "openai", model: "scripted" }),
		]);
		const [a, b] = await Promise.all([prompt("alice", alice, "alice says hi"), prompt("bob", bob, "bob says hi")]);
		expect(a.text).toBe("echo: alice says hi");
		expect(b.text).toBe("echo: bob says hi");
		expect(keyFor("alice says hi")).toBe(`Bearer ${aliceEnvKey}`);
		expect(keyFor("bob says hi")).toBe(`Bearer ${operatorKey}`);

		// Neither agent finds alice's keys (or the operator's): environment, /proc, any file.
		const values = [aliceEnvKey, aliceFileKey, operatorKey];
		const [inAlice, inBob] = await Promise.all([toolFinds("alice", alice, values), toolFinds("bob", bob, values)]);
		for (const out of [inAlice, inBob]) {
			expect(out.split("\n").filter((l) => l === "0")).toHaveLength(2);
			expect(out).toContain("searched");
			expect(out).not.toContain("found: ");
		}

		// Nor does any answer of the API, the keys file (mode 0600: where alice's keys are, not what) or the log.
		const answers = await Promise.all(
			[
				["alice", "/v1/whoami"],
				["alice", `/v1/sessions/${alice}`],
				["alice", "/v1/sessions"],
				["alice", `/v1/sessions/${alice}/messages`],
				["bob", `/v1/sessions/${bob}`],
				["admin", "/v1/audit"],
				["admin", `/v1/sessions/${alice}/budget`],
			].map(([name, path]) => gw.fetch(path as string, name === "admin" ? {} : { headers: as(name as string) })),
		);
		for (const answer of answers) expect(answer.status).toBe(200);
		const texts = await Promise.all(answers.map((r) => r.text()));
		const file = readFileSync(keysFile, "utf8");
		expect(statSync(keysFile).mode & 0o077).toBe(0);
		expect(file).toContain("env:ALICE_OPENAI_KEY");
		for (const text of [...texts, file, logLines.join("\n")])
			for (const key of [aliceEnvKey, aliceFileKey]) expect(text).not.toContain(key);
	});

	it("reach a provider the operator has no key for, from a file; bob gets no key there", async () => {
		const alice = await session("alice", { provider: "groq", model: "scripted-groq" });
		expect((await prompt("alice", alice, "alice asks groq")).text).toBe("echo: alice asks groq");
		expect(keyFor("alice asks groq")).toBe(`Bearer ${aliceFileKey}`);

		const before = provider.requests.length;
		const bob = await gw.api("/v1/sessions", {
			method: "POST",
			json: { provider: "groq", model: "scripted-groq" },
			headers: as("bob"),
		});
		// pi finds no key for groq in bob's session (it may refuse at start or at the prompt): nothing leaves with alice's.
		if (bob.status === 201)
			await gw.api(`/v1/sessions/${bob.body.id}/prompt?wait=600`, {
				method: "POST",
				json: { message: "bob asks groq" },
				headers: as("bob"),
			});
		for (const r of provider.requests.slice(before)) expect(r.headers.authorization).not.toContain(aliceFileKey);
		expect(keyFor("bob asks groq")).toBeUndefined();
	});

	it("stay alice's when her session's pi is started again after a crash", async () => {
		const alice = await session("alice", { provider: "openai", model: "scripted" });
		await prompt("alice", alice, "alice before the crash");
		const { pid } = (await gw.api(`/v1/sessions/${alice}`, { headers: as("alice") })).body;
		process.kill(pid, "SIGKILL");
		await until(async () => (await gw.api(`/v1/sessions/${alice}`, { headers: as("alice") })).body.pid !== pid);
		const resumed = await gw.api(`/v1/sessions/${alice}/resume`, { method: "POST", headers: as("alice") });
		expect(resumed.status).toBe(200);
		expect((await prompt("alice", alice, "alice after the crash")).text).toBe("echo: alice after the crash");
		expect(keyFor("alice after the crash")).toBe(`Bearer ${aliceEnvKey}`);
	});

	it("are named at start-up when their source is missing", () => {
		const notices = startupNotices(gw).join("\n");
		expect(notices).toContain("PROVIDER KEY: carol's own key for openai (file:");
		expect(notices).toContain("cannot be read (ENOENT)");
		expect(notices).not.toContain("alice's own key");
	});

	it("fail carol's turn when her key is missing, without using the operator's", async () => {
		const carol = await session("carol", { provider: "openai", model: "scripted" });
		const before = provider.requests.length;
		const run = await prompt("carol", carol, "carol says hi");
		expect(provider.requests.length).toBe(before);
		const text = JSON.stringify(run);
		expect(text).toContain("carol's own key for openai");
		// Where her key is stays the operator's to know (the start-up and `keys list` say it).
		expect(text).not.toContain("carol-missing.key");
		expect(text).not.toContain(operatorKey);
	});
});
