import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createKey, setProviderKey } from "../../src/http/auth/keys.ts";
import { type ClusterNode, startNode } from "../helpers/cluster.ts";
import { alive, until } from "../helpers/gateway.ts";
import { hasCommand } from "../helpers/host.ts";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.ts";
import { type ScriptedProvider, startScriptedProvider } from "../helpers/scripted-provider.ts";

// Two gateway processes and real pi: a busy machine needs room.
vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 });

// Issue 42 item 5 in cluster mode: a principal's own provider key goes with her session's calls
// whichever node she reaches (a prompt forwarded to the owner), and after the owner dies and
// another node takes the session over, that node's relay sends her key too, never the operator's.
// Each node reads its own copy of the keys file (docs/cluster.md: the same keys file on every node).
const stamp = `${process.pid}-${Date.now()}`;
const operatorKey = `sk-OPERATOR-cluster-canary-${stamp}`;
const aliceKey = `sk-ALICE-cluster-canary-${stamp}`;
const saved = { OPENAI_API_KEY: process.env.OPENAI_API_KEY, ALICE_CLUSTER_KEY: process.env.ALICE_CLUSTER_KEY };
const token = "cluster-own-keys-token";
const leaseTtlMs = 5000;

let server: TestPostgres;
let provider: ScriptedProvider;
let root: string;
const nodes: ClusterNode[] = [];
const keys: Record<string, string> = {};

const model = { id: "scripted", name: "scripted", api: "openai-completions", contextWindow: 128_000, maxTokens: 1024 };

beforeAll(async () => {
	[server, provider] = await Promise.all([startTestPostgres(), startScriptedProvider()]);
	root = mkdtempSync(join(tmpdir(), "pi-gateway-cluster-own-keys-"));
	const keysFile = join(root, "keys.json");
	for (const name of ["alice", "bob"])
		keys[name] = createKey(keysFile, name, ["sessions:read", "sessions:write"]).secret;
	setProviderKey(keysFile, "alice", "openai", "env:ALICE_CLUSTER_KEY");
	process.env.OPENAI_API_KEY = operatorKey;
	process.env.ALICE_CLUSTER_KEY = aliceKey;
	const databaseUrl = await server.freshDatabase();
	for (const name of ["a", "b"]) {
		const agent = join(root, name, "agent");
		mkdirSync(agent, { recursive: true });
		writeFileSync(
			join(agent, "models.json"),
			JSON.stringify({ providers: { openai: { baseUrl: provider.baseUrl, models: [model] } } }),
		);
		nodes.push(
			await startNode({
				name,
				databaseUrl,
				root,
				token,
				leaseTtlMs,
				extra: [`--keys-file=${keysFile}`],
			}),
		);
	}
});
afterAll(async () => {
	await Promise.all(nodes.map((n) => n.stop()));
	await Promise.all([provider?.close(), server?.stop()]);
	for (const [name, value] of Object.entries(saved))
		if (value === undefined) delete process.env[name];
		else process.env[name] = value;
	if (root) rmSync(root, { recursive: true, force: true });
});

const as = (name: string) => ({ authorization: `Bearer ${keys[name]}` });

/** The key the provider got with the call whose last user message was `text`. */
function keyFor(text: string): string | undefined {
	const found = provider.requests.find((r) =>
		(r.body?.messages ?? []).some((m: any) => m.role === "user" && JSON.stringify(m.content).includes(text)),
	);
	return found?.headers.authorization as string | undefined;
}

async function prompt(node: ClusterNode, name: string, id: string, message: string) {
	const run = await node.api(`/v1/sessions/${id}/prompt?wait=600`, {
		method: "POST",
		json: { message },
		headers: as(name),
	});
	expect(run.status, JSON.stringify(run.body)).toBe(200);
	return run.body;
}

describe.runIf(hasCommand("bwrap"))("cluster mode: a principal's own provider key", () => {
	it("goes with her calls through any node and after another node takes her session over", async () => {
		const [a, b] = nodes as [ClusterNode, ClusterNode];
		const created = await a.api("/v1/sessions", {
			method: "POST",
			json: { provider: "openai", model: "scripted" },
			headers: as("alice"),
		});
		expect(created.status).toBe(201);
		const id = created.body.id as string;
		const bobs = await b.api("/v1/sessions", {
			method: "POST",
			json: { provider: "openai", model: "scripted" },
			headers: as("bob"),
		});
		expect(bobs.status).toBe(201);

		// Sent to B, run by A (the owner).
		expect((await prompt(b, "alice", id, "alice through b")).text).toBe("echo: alice through b");
		expect((await prompt(a, "bob", bobs.body.id, "bob through a")).text).toBe("echo: bob through a");
		expect(keyFor("alice through b")).toBe(`Bearer ${aliceKey}`);
		expect(keyFor("bob through a")).toBe(`Bearer ${operatorKey}`);

		// A dies with alice's session; B takes it over and its relay sends her key.
		const pid = (await a.api(`/v1/sessions/${id}`, { headers: as("alice") })).body.pid as number;
		a.signal("SIGKILL");
		await a.exited;
		nodes.splice(nodes.indexOf(a), 1);
		await until(() => !alive(pid));
		expect((await prompt(b, "alice", id, "alice after the takeover")).text).toBe("echo: alice after the takeover");
		expect((await b.api(`/v1/sessions/${id}`, { headers: as("alice") })).body.node).toBe("b");
		expect(keyFor("alice after the takeover")).toBe(`Bearer ${aliceKey}`);
		// No call of the run carried anything but the two keys the operator set up.
		const sent = new Set(provider.requests.map((r) => r.headers.authorization));
		expect([...sent].sort()).toEqual([`Bearer ${aliceKey}`, `Bearer ${operatorKey}`].sort());
	});
});
