import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alive, runEnded, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { type ScriptedProvider, scriptedUsage, startScriptedProvider } from "../helpers/scripted-provider.ts";
import { collect } from "../helpers/sse.ts";

// Issue 45 item 1: a hibernated session wakes on a warm pool's pi (its files moved into that pi's
// folder, pi switched to its file) where that pi is what a cold start would be: the layout
// --workspace-root gives, sessions in their area's folder. Real pi in the sandbox, model calls
// through the relay to a scripted provider on 127.0.0.1, and every pi loads the permission gate from
// the operator's agent folder, so a woken session's approvals are pi's own.
let root: string;
let gw: TestGateway;
let provider: ScriptedProvider;

beforeAll(async () => {
	root = mkdtempSync(join(tmpdir(), "pi-gateway-pooled-wake-"));
	provider = await startScriptedProvider();
	const agent = join(root, "agent");
	mkdirSync(join(agent, "extensions"), { recursive: true });
	const model = { id: "m", name: "m", api: "openai-completions", contextWindow: 128_000, maxTokens: 1024 };
	const providers = { p: { baseUrl: provider.baseUrl, api: "openai-completions", apiKey: "k", models: [model] } };
	writeFileSync(join(agent, "models.json"), JSON.stringify({ providers }));
	copyFileSync(
		resolve(import.meta.dirname, "../../extensions/permission-gate.ts"),
		join(agent, "extensions", "gate.ts"),
	);
	gw = await startTestGateway({ layout: "shared-root", piAgentDir: agent, idleTimeoutMs: 1500, warmPool: 1 });
});
afterAll(async () => {
	await gw?.stop();
	await provider?.close();
	rmSync(root, { recursive: true, force: true });
});

const view = async (id: string) => (await gw.api(`/v1/sessions/${id}`)).body;
const prompt = (id: string, message: string) =>
	gw.api(`/v1/sessions/${id}/prompt?wait=true`, { method: "POST", json: { message } });
/** The pid of the pool's ready pi, once there is one. */
const pooledPid = () => until(() => gw.registry.pool?.readyPids[0], 60_000);
/** A session that said something (pi wrote its file), then hibernated. */
async function asleep(body: Record<string, unknown> = { provider: "p", model: "m" }) {
	const id = await gw.session(body);
	const first = await prompt(id, "before");
	expect(first.body.text, JSON.stringify(first.body)).toBe("echo: before");
	await runEnded(gw, id);
	await until(async () => (await view(id)).status === "stopped", 60_000);
	return id;
}

describe("a hibernated session in its area's folder", () => {
	it("wakes on the pool's pi: same conversation and model, its file moved with it, the stream goes on, the relay counts for it", async () => {
		const id = await asleep();
		const before = await view(id);
		const file = before.piSessionFile as string;
		const pid = await pooledPid();
		const resumed = await gw.fetch(`/v1/sessions/${id}/events`, {
			headers: { "last-event-id": String(before.lastEventId) },
		});
		const frames = collect(resumed, (f) => f.event === "agent_settled");

		const woken = await prompt(id, "after");
		expect(woken.status, JSON.stringify(woken.body)).toBe(200);
		expect(woken.body.text).toBe("echo: after");
		const after = await view(id);
		expect(after.pid).toBe(pid);
		expect(after.model).toMatchObject({ provider: "p", id: "m" });
		// Its files are where the pool's pi (and its sandbox) has its folder now; the old folder is gone.
		expect(after.piSessionFile).not.toBe(file);
		expect(existsSync(after.piSessionFile)).toBe(true);
		expect(existsSync(dirname(file))).toBe(false);
		const messages = (await gw.api(`/v1/sessions/${id}/messages`)).body.messages;
		expect(messages.filter((m: { role: string }) => m.role === "user")).toHaveLength(2);
		// The stream resumed from before the hibernation: numbered on, no gap.
		const ids = (await frames).filter((f) => f.id).map((f) => Number(f.id));
		expect((await frames).map((f) => f.event)).not.toContain("gap");
		expect(ids[0]).toBe(before.lastEventId + 1);
		// The model call went through the relay the pooled pi was started with, counted for this session.
		expect(after.budget.usedTokens - before.budget.usedTokens).toBe(scriptedUsage.total_tokens);
		await gw.api(`/v1/sessions/${id}`, { method: "DELETE" });
		await until(() => !alive(pid), 30_000);
	});

	it("asks its approvals as before: pi's own dialog, answered through the gateway", async () => {
		const id = await asleep();
		const pid = await pooledPid();
		const run = prompt(id, "bash: rm -rf ./scratch && echo removed");
		const approval = await until(
			async () => (await gw.api(`/v1/sessions/${id}/approvals?status=pending`)).body.approvals[0],
			60_000,
		);
		expect((await view(id)).pid).toBe(pid);
		const answered = await gw.api(`/v1/sessions/${id}/approvals/${approval.id}`, {
			method: "POST",
			json: { value: "Allow" },
		});
		expect(answered.status).toBe(200);
		const done = await run;
		expect(done.status, JSON.stringify(done.body)).toBe(200);
		expect(done.body.text).toBe("done: removed");
		await gw.api(`/v1/sessions/${id}`, { method: "DELETE" });
	});

	it("starts cold where the pool's pi is not what a cold start would be (a folder of its own)", async () => {
		mkdirSync(join(gw.workspace, "sub"), { recursive: true });
		const id = await asleep({ provider: "p", model: "m", cwd: "sub" });
		const pooled = await pooledPid();
		expect((await prompt(id, "after")).body.text).toBe("echo: after");
		const { pid } = await view(id);
		expect(pid).not.toBe(pooled);
		expect(gw.registry.pool?.readyPids).toContain(pooled);
		await gw.api(`/v1/sessions/${id}`, { method: "DELETE" });
	});
});

// The operator's --sandbox off (no bubblewrap layer, no relay): the pooled pi is handed over all the same.
describe("with the sandbox off", () => {
	let off: TestGateway;
	beforeAll(async () => {
		off = await startTestGateway({ layout: "shared-root", sandbox: "off", idleTimeoutMs: 1500, warmPool: 1 });
	});
	afterAll(() => off?.stop());

	it("a hibernated session wakes on the pool's pi, its conversation intact", async () => {
		const id = await off.session();
		const ask = (message: string) =>
			off.api(`/v1/sessions/${id}/prompt?wait=true`, { method: "POST", json: { message } });
		expect((await ask("echo: before")).body.text).toBe("before");
		await runEnded(off, id);
		await until(async () => (await off.api(`/v1/sessions/${id}`)).body.status === "stopped", 60_000);
		const pooled = await until(() => off.registry.pool?.readyPids[0], 60_000);
		expect((await ask("echo: after")).body.text).toBe("after");
		expect((await off.api(`/v1/sessions/${id}`)).body.pid).toBe(pooled);
		const messages = (await off.api(`/v1/sessions/${id}/messages`)).body.messages as { role: string }[];
		expect(messages.filter((m) => m.role === "user")).toHaveLength(2);
	});
});
