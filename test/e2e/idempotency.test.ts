import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConfigInput } from "../../src/config/config.ts";
import { bundledPiCli } from "../../src/sessions/process/spawn.ts";
import { fixtures, startTestGateway, stdinRecord, type TestGateway, until } from "../helpers/gateway.ts";

// Real pi behind a stdin recorder: a replayed answer must not send anything to pi again.
const record = stdinRecord("idempotency");
const gate = resolve(import.meta.dirname, "../../extensions/permission-gate.ts");
let root: string;
let dirs: Partial<ConfigInput>;
let gw: TestGateway;
const open = new Set<TestGateway>();

async function start() {
	const g = await startTestGateway(dirs);
	open.add(g);
	return g;
}

beforeAll(async () => {
	root = mkdtempSync(join(tmpdir(), "pi-gateway-idem-"));
	for (const dir of ["workspace", "agent"]) mkdirSync(join(root, dir));
	dirs = {
		workspaceRoot: join(root, "workspace"),
		dataDir: join(root, "data"),
		piAgentDir: join(root, "agent"),
		extensions: { gate },
		piCommand: [process.execPath, join(fixtures, "tee-pi.mjs"), record.path, bundledPiCli()],
		sandboxWritable: [record.path],
	};
	gw = await start();
});
afterAll(async () => {
	for (const g of open) await g.stop();
	rmSync(root, { recursive: true, force: true });
});

const prompts = (message: string) =>
	record.commands().filter((c: { type: string; message?: string }) => c.type === "prompt" && c.message === message);
const post = (g: TestGateway, path: string, json: unknown, key: string, headers: Record<string, string> = {}) =>
	g.api(path, { method: "POST", json, headers: { "idempotency-key": key, ...headers } });

describe("Idempotency-Key", () => {
	let id: string;

	it("create: a retry gets the same session, not a second one", async () => {
		const first = await post(gw, "/v1/sessions", { name: "idem", extensions: ["gate"] }, "create-1");
		expect(first.status).toBe(201);
		const again = await post(gw, "/v1/sessions", { name: "idem", extensions: ["gate"] }, "create-1");
		expect(again.status).toBe(201);
		expect(again.res.headers.get("idempotent-replayed")).toBe("true");
		expect(again.res.headers.get("location")).toBe(`/v1/sessions/${first.body.id}`);
		expect(again.body.id).toBe(first.body.id);
		expect((await gw.api("/v1/sessions")).body.sessions).toHaveLength(1);
		id = first.body.id;
	});

	it("a retried prompt with the same key runs once, also after a gateway restart; another body is 422", async () => {
		const path = `/v1/sessions/${id}/prompt`;
		const first = await post(gw, path, { message: "say once" }, "prompt-1");
		expect(first.status).toBe(202);
		const again = await post(gw, path, { message: "say once" }, "prompt-1");
		expect(again.status).toBe(202);
		expect(again.body).toEqual(first.body);
		expect(again.res.headers.get("idempotent-replayed")).toBe("true");
		expect(first.res.headers.get("idempotent-replayed")).toBeNull();

		const other = await post(gw, path, { message: "say twice" }, "prompt-1");
		expect(other.status).toBe(422);
		expect(other.body.code).toBe("idempotency_key_reused");
		await until(async () => (await gw.api(`/v1/sessions/${id}`)).body.status === "idle");

		await gw.close();
		open.delete(gw);
		gw = await start();
		const afterRestart = await post(gw, path, { message: "say once" }, "prompt-1");
		expect(afterRestart.status).toBe(202);
		expect(afterRestart.body).toEqual(first.body);
		expect(afterRestart.res.headers.get("idempotent-replayed")).toBe("true");
		expect(prompts("say once")).toHaveLength(1);
		expect(prompts("say twice")).toHaveLength(0);
	});

	it("a key whose first request still runs is 409; once it ended the answer is replayed, and an approval answer too", async () => {
		mkdirSync(join(await gw.folder(id), "scratch"), { recursive: true });
		const path = `/v1/sessions/${id}/prompt?wait=true`;
		const body = { message: "bash: rm -rf ./scratch" };
		const first = post(gw, path, body, "wait-1");
		const pending = await until(
			async () => (await gw.api(`/v1/sessions/${id}/approvals?status=pending`)).body.approvals[0],
		);
		const busy = await post(gw, path, body, "wait-1");
		expect(busy.status).toBe(409);
		expect(busy.body.code).toBe("idempotency_key_in_use");

		const answerPath = `/v1/sessions/${id}/approvals/${pending.id}`;
		const answered = await post(gw, answerPath, { value: "Allow" }, "answer-1");
		expect(answered.status).toBe(200);
		const reanswered = await post(gw, answerPath, { value: "Allow" }, "answer-1");
		expect(reanswered.status).toBe(200);
		expect(reanswered.body).toEqual(answered.body);

		const done = await first;
		expect(done.status).toBe(200);
		const replayed = await post(gw, path, body, "wait-1");
		expect(replayed.status).toBe(200);
		expect(replayed.body).toEqual(done.body);
		expect(prompts("bash: rm -rf ./scratch")).toHaveLength(1);
	});

	it("is refused on streams, which cannot be replayed, and must be visible ASCII", async () => {
		const stream = await gw.fetch(`/v1/sessions/${id}/prompt/stream`, {
			method: "POST",
			headers: { "content-type": "application/json", "idempotency-key": "s-1" },
			body: JSON.stringify({ message: "streamed" }),
		});
		expect(stream.status).toBe(400);
		const accept = await post(gw, `/v1/sessions/${id}/prompt`, { message: "streamed" }, "s-2", {
			accept: "text/event-stream",
		});
		expect(accept.status).toBe(400);
		const bad = await post(gw, `/v1/sessions/${id}/prompt`, { message: "streamed" }, "with space");
		expect(bad.status).toBe(400);
		expect(prompts("streamed")).toHaveLength(0);
	});
});
