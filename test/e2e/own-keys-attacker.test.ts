import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey, setProviderKey } from "../../src/http/auth/keys.ts";
import { startTestGateway, type TestGateway } from "../helpers/gateway.ts";
import { hasCommand } from "../helpers/host.ts";
import { type ScriptedProvider, startScriptedProvider } from "../helpers/scripted-provider.ts";

// An attacker's pass over issue 42 item 5 (a principal's own provider keys), in README's layout
// with real pi: bob, an ordinary principal, tries to make alice's key go out on his behalf (a fork
// of her session, a cwd in her area, an admin's session there), to read it (his sandbox, the API's
// answers), and to make her turn fall back to the operator's key (her key file removed, her
// variable emptied while her session runs). Each test asserts the safe behaviour.
const stamp = `${process.pid}-${Date.now()}`;
const operatorKey = `sk-OPERATOR-atk-${stamp}`;
const aliceKey = `sk-ALICE-atk-${stamp}`;
const daveKey = `sk-DAVE-atk-${stamp}`;
const saved = { OPENAI_API_KEY: process.env.OPENAI_API_KEY, ALICE_ATK_KEY: process.env.ALICE_ATK_KEY };

let root: string;
let provider: ScriptedProvider;
let gw: TestGateway;
let daveFile: string;
const keys: Record<string, string> = {};
const logLines: string[] = [];

beforeAll(async () => {
	root = mkdtempSync(join(tmpdir(), "pi-gateway-own-keys-atk-"));
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
	const secrets = join(root, "secrets");
	mkdirSync(secrets, { mode: 0o700 });
	daveFile = join(secrets, "dave-openai.key");
	writeFileSync(daveFile, `${daveKey}\n`, { mode: 0o600 });
	const keysFile = join(root, "keys.json");
	for (const name of ["alice", "bob", "dave"])
		keys[name] = createKey(keysFile, name, ["sessions:read", "sessions:write"]).secret;
	setProviderKey(keysFile, "alice", "openai", "env:ALICE_ATK_KEY");
	setProviderKey(keysFile, "dave", "openai", `file:${daveFile}`);
	process.env.OPENAI_API_KEY = operatorKey;
	process.env.ALICE_ATK_KEY = aliceKey;
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

/** Headers of `name`'s key; "admin" is the gateway's admin token (gw.api's default). */
const as = (name: string): Record<string, string> =>
	name === "admin" ? {} : { authorization: `Bearer ${keys[name]}` };

async function session(name: string, body: Record<string, unknown> = {}): Promise<string> {
	const created = await gw.api("/v1/sessions", {
		method: "POST",
		json: { provider: "openai", model: "scripted", ...body },
		headers: as(name),
	});
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

/** The Authorization of every call whose messages hold `text` (each turn's calls carry its prompt). */
function keysFor(text: string): string[] {
	return provider.requests
		.filter((r) => JSON.stringify(r.body?.messages ?? []).includes(text))
		.map((r) => String(r.headers.authorization));
}

async function share(owner: string, id: string, principal: string, can: string[]) {
	const put = await gw.api(`/v1/sessions/${id}/access`, {
		method: "PUT",
		json: { grants: [{ principal, can }] },
		headers: as(owner),
	});
	expect(put.status).toBe(200);
}

describe.runIf(hasCommand("bwrap"))("bob against alice's own provider key", () => {
	it("bob's fork of alice's session (shared with him to read) is his: it goes out on the operator's key", {
		timeout: 600_000,
	}, async () => {
		const alice = await session("alice");
		await prompt("alice", alice, "alice before the fork");
		expect(keysFor("alice before the fork")).toEqual([`Bearer ${aliceKey}`]);
		await share("alice", alice, "bob", ["read"]);
		const fork = await gw.api(`/v1/sessions/${alice}/fork-session`, { method: "POST", json: {}, headers: as("bob") });
		expect(fork.status).toBe(201);
		const access = await gw.api(`/v1/sessions/${fork.body.id}/access`, { headers: as("bob") });
		expect(access.body.owner).toBe("bob");
		await prompt("bob", fork.body.id, "bob in his fork");
		// The fork's call carries the whole conversation (alice's turn too): only the operator's key.
		expect(keysFor("bob in his fork")).toEqual([`Bearer ${operatorKey}`]);
		// With `write` on her session, bob's prompt there is hers (she chose to share it): her key.
		await share("alice", alice, "bob", ["read", "write"]);
		await prompt("bob", alice, "bob in alice's session");
		expect(keysFor("bob in alice's session")).toEqual([`Bearer ${aliceKey}`]);
	});

	it("bob cannot work in alice's area; an admin's session there goes out on the operator's key", async () => {
		const alice = await session("alice");
		const folder = (await gw.api(`/v1/sessions/${alice}`, { headers: as("alice") })).body.cwd as string;
		for (const cwd of ["../@alice", folder, `../@alice/${alice}`]) {
			const bob = await gw.api("/v1/sessions", {
				method: "POST",
				json: { provider: "openai", model: "scripted", cwd },
				headers: as("bob"),
			});
			expect(bob.status).toBe(403);
		}
		const admin = await session("admin", { cwd: folder });
		await prompt("admin", admin, "the admin in alice's folder");
		expect(keysFor("the admin in alice's folder")).toEqual([`Bearer ${operatorKey}`]);
	});

	it("bob's agent cannot reach alice's key through its relay, naming her session or her placeholder", async () => {
		const alice = await session("alice");
		const bob = await session("bob");
		const before = provider.requests.length;
		// Bob's tool calls his relay with his placeholder and with alice's kind (own-openai), with
		// headers and a path that name alice's session or alice.
		const body = `{"model":"scripted","messages":[{"role":"user","content":"bob tool call"}]}`;
		const calls = [
			["$OPENAI_API_KEY", `x-session-id: ${alice}`, "openai"],
			["$OPENAI_API_KEY", "x-principal: alice", `openai/${alice}`],
			["pi-gateway-placeholder-own-openai", `x-session-id: ${alice}`, "openai"],
			["pi-gateway-placeholder-own-openai", "x-owner: alice", `${alice}/openai`],
		].map(
			([key, header, path]) =>
				`curl -s -m 20 -X POST "http://127.0.0.1:4317/${path}/chat/completions" -H "authorization: Bearer ${key}" -H "${header}" -H "content-type: application/json" -d '${body}'; echo`,
		);
		const script = calls.join("; ");
		await prompt("bob", bob, `bash: { ${script} ; } > out.txt 2>&1`);
		for (const r of provider.requests.slice(before)) expect(String(r.headers.authorization)).not.toContain(aliceKey);
		const tool = keysFor("bob tool call");
		expect(tool.length).toBeGreaterThan(1);
		for (const key of tool) expect(key).toBe(`Bearer ${operatorKey}`);
		void alice;
	});

	it("no answer bob can read, nor the log, holds alice's key", async () => {
		const texts = await Promise.all(
			["/v1/info", "/v1/whoami", "/v1/sessions", "/metrics"].map(async (path) =>
				(await gw.fetch(path, { headers: as("bob") })).text(),
			),
		);
		const adminTexts = await Promise.all(
			["/v1/audit", "/metrics", "/v1/info"].map(async (path) => (await gw.fetch(path)).text()),
		);
		for (const text of [...texts, ...adminTexts, logLines.join("\n")]) {
			expect(text).not.toContain(aliceKey);
			expect(text).not.toContain(daveKey);
		}
	});

	it("a key file removed while dave's session runs fails his turn, without the operator's key", async () => {
		const dave = await session("dave");
		await prompt("dave", dave, "dave with his file");
		expect(keysFor("dave with his file")).toEqual([`Bearer ${daveKey}`]);
		rmSync(daveFile);
		try {
			const run = await prompt("dave", dave, "dave without his file");
			expect(keysFor("dave without his file")).toEqual([]);
			// What dave and those he shares his session with (and his agent) read: not where his key is.
			expect(JSON.stringify(run)).not.toContain("dave-openai.key");
			expect(JSON.stringify(run)).toContain("dave's own key for openai is unavailable");
			// A file of the same name that is empty, or a folder there: still refused.
			writeFileSync(daveFile, "  \n", { mode: 0o600 });
			await prompt("dave", dave, "dave with an empty file");
			expect(keysFor("dave with an empty file")).toEqual([]);
		} finally {
			rmSync(daveFile, { force: true });
			writeFileSync(daveFile, `${daveKey}\n`, { mode: 0o600 });
		}
		await prompt("dave", dave, "dave with his file again");
		expect(keysFor("dave with his file again")).toEqual([`Bearer ${daveKey}`]);
	});

	it("alice's variable emptied while her session runs fails her turn, without the operator's key", async () => {
		const alice = await session("alice");
		await prompt("alice", alice, "alice with her variable");
		try {
			process.env.ALICE_ATK_KEY = "";
			await prompt("alice", alice, "alice with an empty variable");
			expect(keysFor("alice with an empty variable")).toEqual([]);
			delete process.env.ALICE_ATK_KEY;
			await prompt("alice", alice, "alice with no variable");
			expect(keysFor("alice with no variable")).toEqual([]);
		} finally {
			process.env.ALICE_ATK_KEY = aliceKey;
		}
		expect(keysFor("alice with her variable")).toEqual([`Bearer ${aliceKey}`]);
	});
});
