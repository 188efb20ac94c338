import { copyFileSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { type ScriptedProvider, startScriptedProvider } from "../helpers/scripted-provider.ts";

// Issue 45 item 3: every create is served from the warm pool when it has a pi. Real pi, sandboxed
// as the machine allows; the default model is the demo, and the agent folder's models.json adds
// a scripted OpenAI-compatible provider on 127.0.0.1 (openai/scripted, and openai/thinker, which
// reasons). The permission gate is in the agent folder's extensions, so every pi loads it, pooled
// ones too. "Served by a pooled pi" is what warm-pool.test.ts checks: its pid was one the pool held
// ready before the create.
let gw: TestGateway;
let root: string;
let provider: ScriptedProvider;
let keysFile: string;
const keys: Record<string, string> = {};
const leftovers: string[] = [];
const saved = process.env.OPENAI_API_KEY;
const pooledPids = () => new Set(gw.registry.pool?.readyPids ?? []);
const as = (who?: string): Record<string, string> => (who ? { authorization: `Bearer ${keys[who]}` } : {});
const create = (who: string | undefined, json: Record<string, unknown>) =>
	gw.api("/v1/sessions", { method: "POST", json, headers: as(who) });
const prompt = (who: string | undefined, id: string, message: string) =>
	gw.api(`/v1/sessions/${id}/prompt?wait=true`, { method: "POST", json: { message }, headers: as(who) });
const scripted = { provider: "openai", model: "scripted" };

beforeAll(async () => {
	root = mkdtempSync(join(tmpdir(), "pi-gateway-pool-models-"));
	provider = await startScriptedProvider();
	const agent = join(root, "agent");
	mkdirSync(join(agent, "extensions"), { recursive: true });
	const model = (id: string, reasoning = false) => ({
		id,
		name: id,
		api: "openai-completions",
		reasoning,
		contextWindow: 128_000,
		maxTokens: 1024,
	});
	const providers = { openai: { baseUrl: provider.baseUrl, models: [model("scripted"), model("thinker", true)] } };
	writeFileSync(join(agent, "models.json"), JSON.stringify({ providers }));
	copyFileSync(resolve(import.meta.dirname, "../../extensions/permission-gate.ts"), join(agent, "extensions/gate.ts"));
	process.env.OPENAI_API_KEY = "sk-operator-scripted";
	keysFile = join(root, "keys.json");
	for (const who of ["alice", "bob"])
		keys[who] = createKey(keysFile, who, [
			"sessions:read",
			"sessions:write",
			"approvals:read",
			"approvals:answer",
		]).secret;
	gw = await startTestGateway({ keysFile, piAgentDir: agent, warmPool: 2 });
	await until(() => gw.registry.pool?.readyCount === 2, 60_000);
});
afterAll(async () => {
	await gw?.stop();
	for (const dir of leftovers) rmSync(dir, { recursive: true, force: true });
	await provider?.close();
	if (saved === undefined) delete process.env.OPENAI_API_KEY;
	else process.env.OPENAI_API_KEY = saved;
	rmSync(root, { recursive: true, force: true });
});

describe("creates that name a model", () => {
	it("take a pooled pi and set the model on it, which answers (not the demo)", { timeout: 120_000 }, async () => {
		const before = pooledPids();
		const res = await create(undefined, { ...scripted, name: "named" });
		expect(res.status, JSON.stringify(res.body)).toBe(201);
		expect(before.has(res.body.pid)).toBe(true);
		expect(res.body).toMatchObject({ name: "named", model: { provider: "openai", id: "scripted" } });
		const run = await prompt(undefined, res.body.id, "hello pool");
		expect(run.status, JSON.stringify(run.body)).toBe(200);
		expect(run.body.text).toBe("echo: hello pool");
		expect(provider.requests.at(-1)?.body?.model).toBe("scripted");
		const state = await gw.api(`/v1/sessions/${res.body.id}/state`);
		expect(state.body.model).toMatchObject({ provider: "openai", id: "scripted" });
	});

	it("a thinking level is set too; a switch whose level pi would pick otherwise than a cold start starts cold", {
		timeout: 120_000,
	}, async () => {
		await until(() => gw.registry.pool?.readyCount === 2, 60_000);
		const before = pooledPids();
		// The demo model does not reason, so the pooled pi's level is off; pi keeps it on a switch where
		// no setting names a default, a cold start on a model that reasons takes medium.
		const cold = await create(undefined, { provider: "openai", model: "thinker" });
		expect(cold.status, JSON.stringify(cold.body)).toBe(201);
		expect(before.has(cold.body.pid)).toBe(false);
		expect((await gw.api(`/v1/sessions/${cold.body.id}/state`)).body.thinkingLevel).toBe("medium");
		await until(() => gw.registry.pool?.readyCount === 2, 60_000);
		const again = pooledPids();
		const low = await create(undefined, { provider: "openai", model: "thinker", thinkingLevel: "low" });
		expect(low.status).toBe(201);
		expect(again.has(low.body.pid)).toBe(true);
		const state = (await gw.api(`/v1/sessions/${low.body.id}/state`)).body;
		expect(state).toMatchObject({ model: { provider: "openai", id: "thinker" }, thinkingLevel: "low" });
	});

	it("a model pi does not have is refused as a cold start refuses it, and the pool goes on", {
		timeout: 120_000,
	}, async () => {
		await until(() => gw.registry.pool?.readyCount === 2, 60_000);
		const res = await create(undefined, { provider: "openai", model: "nope" });
		expect(res.status).toBe(422);
		expect(res.body.code).toBe("unknown_model");
		await until(() => gw.registry.pool?.readyCount === 2, 60_000);
	});
});

describe("principals", () => {
	it("bob's creates never take or drain alice's pooled pi: her next create is warm", { timeout: 180_000 }, async () => {
		const workspace = realpathSync(gw.workspace);
		const first = await create("alice", scripted);
		expect(first.status).toBe(201);
		expect(first.body.cwd).toBe(join(workspace, "@alice", first.body.id));
		const aliceArea = join(workspace, "@alice");
		const readyIn = (area: string) => gw.registry.pool?.readyPidsIn(area) ?? [];
		await until(() => readyIn(aliceArea).length === 1, 60_000);
		const alicePool = new Set(readyIn(aliceArea));
		for (let i = 0; i < 3; i++) {
			const bobs = await create("bob", i % 2 ? scripted : {});
			expect(bobs.status).toBe(201);
			expect(alicePool.has(bobs.body.pid)).toBe(false);
			expect(bobs.body.cwd).toBe(join(workspace, "@bob", bobs.body.id));
			await until(() => readyIn(join(workspace, "@bob")).length === 1, 60_000);
		}
		// Hers waited all along, the same pi.
		expect(new Set(readyIn(aliceArea))).toEqual(alicePool);
		const before = pooledPids();
		const second = await create("alice", scripted);
		expect(second.status).toBe(201);
		expect(before.has(second.body.pid)).toBe(true);
		expect(second.body.cwd).toBe(join(aliceArea, second.body.id));
		expect((await prompt("alice", second.body.id, "alice again")).body.text).toBe("echo: alice again");
	});

	it("a principal given a key while the gateway runs gets a pooled pi for its first create, whose approvals work", {
		timeout: 180_000,
	}, async () => {
		keys.carol = createKey(keysFile, "carol", [
			"sessions:read",
			"sessions:write",
			"approvals:read",
			"approvals:answer",
		]).secret;
		const area = join(realpathSync(gw.workspace), "@carol");
		// Her area's pi is started once the keys file is read again (within 500 ms), and waits ready.
		await until(() => gw.registry.pool?.readyPidsIn(area).length === 1, 60_000);
		const pooled = pooledPids();
		const res = await create("carol", scripted);
		expect(res.status, JSON.stringify(res.body)).toBe(201);
		expect(pooled.has(res.body.pid)).toBe(true);
		expect(res.body.cwd).toBe(join(area, res.body.id));
		const asked = prompt("carol", res.body.id, "bash: rm -rf ./scratch");
		const approval = await until(
			async () =>
				(await gw.api(`/v1/sessions/${res.body.id}/approvals?status=pending`, { headers: as("carol") })).body
					.approvals?.[0],
			60_000,
		);
		const answered = await gw.api(`/v1/sessions/${res.body.id}/approvals/${approval.id}`, {
			method: "POST",
			json: { value: "Allow" },
			headers: as("carol"),
		});
		expect(answered.status).toBe(200);
		const run = await asked;
		expect(run.status).toBe(200);
		expect(run.body.text).toMatch(/^done: /);
	});

	it("after a restart, the principals whose sessions are the newest find a pooled pi at their first create", {
		timeout: 180_000,
	}, async () => {
		keys.dave = createKey(keysFile, "dave", ["sessions:read", "sessions:write"]).secret;
		// The newest sessions, oldest first: dave's, bob's, alice's. The pool keeps two principals'
		// pools (--warm-pool 2): alice's and bob's after the restart, not dave's.
		for (const who of ["dave", "bob", "alice"]) expect((await create(who, {})).status).toBe(201);
		const before = gw;
		await before.close();
		gw = await startTestGateway({
			keysFile,
			piAgentDir: join(root, "agent"),
			dataDir: before.config.dataDir,
			warmPool: 2,
		});
		// Its data dir is the new gateway's: removed after it (afterAll).
		leftovers.push(before.root);
		const workspace = realpathSync(gw.workspace);
		const readyIn = (who: string) => gw.registry.pool?.readyPidsIn(join(workspace, `@${who}`)) ?? [];
		await until(() => readyIn("alice").length === 1 && readyIn("bob").length === 1, 60_000);
		expect(readyIn("dave")).toEqual([]);
		const pooled = pooledPids();
		const res = await create("alice", {});
		expect(res.status, JSON.stringify(res.body)).toBe(201);
		expect(pooled.has(res.body.pid)).toBe(true);
		expect((await prompt("alice", res.body.id, "after the restart")).body.text).toMatch(/said: after the restart$/);
	});
});
