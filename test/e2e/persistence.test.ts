import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConfigInput } from "../../src/config/config.ts";
import { alive, noPool, runEnded, startTestGateway, type TestGateway } from "../helpers/gateway.ts";
import { collect } from "../helpers/sse.ts";

// Real pi with the demo model: the conversation must come back from pi's own session file.
let root: string;
let dirs: Partial<ConfigInput>;
const open: TestGateway[] = [];

async function gateway(overrides: Partial<ConfigInput> = {}): Promise<TestGateway> {
	const gw = await startTestGateway({ ...noPool, ...dirs, ...overrides });
	open.push(gw);
	return gw;
}
async function stop(gw: TestGateway) {
	await gw.stop();
	open.splice(open.indexOf(gw), 1);
}

beforeAll(() => {
	root = mkdtempSync(join(tmpdir(), "pi-gateway-persist-"));
	for (const dir of ["workspace", "agent"]) mkdirSync(join(root, dir));
	dirs = { workspaceRoot: join(root, "workspace"), dataDir: join(root, "data"), piAgentDir: join(root, "agent") };
});
afterAll(async () => {
	for (const gw of [...open]) await gw.stop();
	rmSync(root, { recursive: true, force: true });
});

describe("a gateway restart", () => {
	it("lists persisted sessions as stopped, resumes them with the conversation intact, and says ephemeral ones are gone", async () => {
		const first = await gateway();
		const keep = await first.session({ name: "keep" });
		const ephemeral = await first.session({ persist: false });
		const run = await first.api(`/v1/sessions/${keep}/prompt?wait=true`, {
			method: "POST",
			json: { message: "echo: remember this" },
		});
		expect(run.body.text).toBe("remember this");
		await runEnded(first, keep);
		const messages = (await first.api(`/v1/sessions/${keep}/messages`)).body;
		const before = (await first.api(`/v1/sessions/${keep}`)).body;
		expect(alive(before.pid)).toBe(true);
		await stop(first);
		expect(alive(before.pid)).toBe(false);

		const second = await gateway();
		const listed = (await second.api("/v1/sessions")).body.sessions;
		expect(listed).toHaveLength(1);
		expect(listed[0]).toMatchObject({
			id: keep,
			name: "keep",
			status: "stopped",
			pid: null,
			persist: true,
			resumable: true,
			createdAt: before.createdAt,
			piSessionId: before.piSessionId,
			piSessionFile: before.piSessionFile,
			model: { provider: "pi-gateway-demo", id: "demo" },
			// A clean shutdown recorded the exact last sequence number; the log continues after it.
			lastEventId: before.lastEventId + 2,
		});
		const gone = await second.api(`/v1/sessions/${ephemeral}`);
		expect(gone.status).toBe(410);
		expect(gone.body.code).toBe("session_gone");
		expect(gone.body.detail).toMatch(
			/^Session ses_\S+ was ephemeral \(persist:false\) and did not survive the gateway restart at /,
		);

		const resumed = await second.api(`/v1/sessions/${keep}/resume`, { method: "POST" });
		expect(resumed.status).toBe(200);
		expect(resumed.body).toMatchObject({ id: keep, status: "idle", piSessionFile: before.piSessionFile });
		expect(resumed.body.pid).not.toBe(before.pid);
		expect((await second.api(`/v1/sessions/${keep}/messages`)).body).toEqual(messages);
		const more = await second.api(`/v1/sessions/${keep}/prompt?wait=true`, {
			method: "POST",
			json: { message: "echo: and more" },
		});
		expect(more.body.text).toBe("and more");
		const longer = (await second.api(`/v1/sessions/${keep}/messages`)).body;
		expect(longer.messages.slice(0, messages.messages.length)).toEqual(messages.messages);
		expect(longer.messages).toHaveLength(messages.messages.length + 2);
		await stop(second);

		// Auto-resume off: a command to a stopped session is refused until an explicit resume.
		const strict = await gateway({ autoResume: false });
		const refused = await strict.api(`/v1/sessions/${keep}/messages`);
		expect(refused.status).toBe(409);
		expect(refused.body).toMatchObject({
			code: "session_stopped",
			detail: `Session ${keep} is stopped; POST /v1/sessions/${keep}/resume starts pi again`,
		});
		await stop(strict);

		// Auto-resume on (the default): the command itself starts pi again.
		const third = await gateway();
		const direct = await third.api(`/v1/sessions/${keep}/messages`);
		expect(direct.status).toBe(200);
		expect(direct.body).toEqual(longer);
		expect((await third.api(`/v1/sessions/${keep}`)).body.status).toBe("idle");
		expect((await third.api(`/v1/sessions/${keep}`, { method: "DELETE" })).status).toBe(204);
		await stop(third);
		expect((await (await gateway()).api("/v1/sessions")).body.sessions).toEqual([]);
	});
});

describe("hibernation", () => {
	let gw: TestGateway;
	beforeAll(async () => {
		gw = await startTestGateway({ ...noPool, idleTimeoutMs: 1200, maxLiveSessions: 1 });
	});
	afterAll(() => gw?.stop());

	it("an idle session loses its pi process and gets it back on the next command", async () => {
		const id = await gw.session();
		await gw.api(`/v1/sessions/${id}/prompt?wait=true`, { method: "POST", json: { message: "echo: sleepy" } });
		const messages = (await gw.api(`/v1/sessions/${id}/messages`)).body;
		const { pid, lastEventId } = (await gw.api(`/v1/sessions/${id}`)).body;
		const frames = await collect(await gw.fetch(`/v1/sessions/${id}/events?after=${lastEventId}`));
		expect(frames.at(-1)?.json).toMatchObject({ type: "session_exit", reason: "idle", resumable: true, code: 0 });
		expect((await gw.api(`/v1/sessions/${id}`)).body).toMatchObject({ status: "stopped", pid: null });
		expect(alive(pid)).toBe(false);
		expect((await gw.api(`/v1/sessions/${id}/messages`)).body).toEqual(messages);
		const woken = (await gw.api(`/v1/sessions/${id}`)).body;
		expect(woken.status).toBe("idle");
		expect(woken.pid).not.toBe(pid);
		await gw.api(`/v1/sessions/${id}`, { method: "DELETE" });
	});
});

// Apart from the idle delay above: with it, a session idle past 1.2 s on a busy machine went "idle"
// before the next create could evict it, and the eviction (reason "lru") was never seen.
describe("the live cap", () => {
	let gw: TestGateway;
	beforeAll(async () => {
		gw = await startTestGateway({ ...noPool, idleTimeoutMs: 0, maxLiveSessions: 1 });
	});
	afterAll(() => gw?.stop());

	it("past maxLiveSessions the least recently used session hibernates, and comes back when used", async () => {
		const a = await gw.session({ name: "a" });
		await gw.api(`/v1/sessions/${a}/prompt?wait=true`, { method: "POST", json: { message: "echo: from a" } });
		const aPid = (await gw.api(`/v1/sessions/${a}`)).body.pid;
		const b = await gw.session({ name: "b" });
		expect((await gw.api(`/v1/sessions/${a}`)).body).toMatchObject({ status: "stopped", pid: null });
		expect(alive(aPid)).toBe(false);
		const exit = (await collect(await gw.fetch(`/v1/sessions/${a}/events?after=0`))).at(-1);
		expect(exit?.json).toMatchObject({ type: "session_exit", reason: "lru", resumable: true });

		const again = await gw.api(`/v1/sessions/${a}/prompt?wait=true`, {
			method: "POST",
			json: { message: "echo: a again" },
		});
		expect(again.body.text).toBe("a again");
		const texts = (await gw.api(`/v1/sessions/${a}/messages`)).body.messages
			.filter((m: { role: string }) => m.role !== "system")
			.map((m: { content: { text: string }[] }) => m.content[0]?.text);
		expect(texts).toEqual(["echo: from a", "from a", "echo: a again", "a again"]);
		expect((await gw.api(`/v1/sessions/${b}`)).body).toMatchObject({ status: "stopped", pid: null });
	});
});
