import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundledPiCli } from "../../src/sessions/process/spawn.ts";
import { fixtures, startTestGateway, stdinRecord, type TestGateway, until } from "../helpers/gateway.ts";

// Real pi (behind a stdin recorder) with the offline demo model, over real HTTP.
let gw: TestGateway;
let id: string;
const record = stdinRecord("core");
const sent = record.commands;

beforeAll(async () => {
	gw = await startTestGateway({
		piCommand: [process.execPath, join(fixtures, "tee-pi.mjs"), record.path, bundledPiCli()],
		// The recorder runs where pi runs: in the sandbox, which must let it write its record.
		sandboxWritable: [record.path],
	});
	// A tiny keep-recent budget lets /compact summarise this short conversation (with the demo model).
	writeFileSync(join(gw.root, "agent", "settings.json"), JSON.stringify({ compaction: { keepRecentTokens: 5 } }));
	id = await gw.session({ name: "core" });
});
afterAll(() => gw?.stop());

const post = (path: string, json: unknown = {}) => gw.api(`/v1/sessions/${id}${path}`, { method: "POST", json });
const put = (path: string, json: unknown) => gw.api(`/v1/sessions/${id}${path}`, { method: "PUT", json });
const get = (path: string) => gw.api(`/v1/sessions/${id}${path}`);

describe("sessions", () => {
	it("creates a ready session with the representation from the design", async () => {
		const { status, body } = await gw.api(`/v1/sessions/${id}`);
		expect(status).toBe(200);
		// README's layout: a session without cwd works in a folder of its own, <root>/<id> for the admin.
		expect(body).toMatchObject({ id, name: "core", status: "idle", cwd: join(gw.workspace, id), persist: true });
		expect(body.pid).toBeGreaterThan(0);
		expect(body.model).toEqual({ provider: "pi-gateway-demo", id: "demo" });
		expect(body.piSessionFile).toMatch(/\.jsonl$/);
		const list = await gw.api("/v1/sessions");
		expect(list.body.sessions.map((s: { id: string }) => s.id)).toContain(id);
	});

	it("answers 201 with a Location header", async () => {
		const res = await gw.api("/v1/sessions", { method: "POST", json: { persist: false } });
		expect(res.status).toBe(201);
		expect(res.res.headers.get("location")).toBe(`/v1/sessions/${res.body.id}`);
		expect(res.body.piSessionFile).toBeNull();
		expect((await gw.api(`/v1/sessions/${res.body.id}`, { method: "DELETE" })).status).toBe(204);
		expect((await gw.api(`/v1/sessions/${res.body.id}`)).status).toBe(404);
	});

	it("refuses a cwd outside the workspace root before starting pi", async () => {
		const res = await gw.api("/v1/sessions", { method: "POST", json: { cwd: "/" } });
		expect(res.status).toBe(403);
		expect(res.res.headers.get("content-type")).toContain("application/problem+json");
		expect(res.body.code).toBe("path_outside_root");
		const missing = await gw.api("/v1/sessions", { method: "POST", json: { cwd: "nope" } });
		expect(missing.status).toBe(400);
	});

	it("404s an unknown session as problem+json", async () => {
		const res = await gw.api("/v1/sessions/ses_nope/state");
		expect(res.status).toBe(404);
		expect(res.body).toMatchObject({ status: 404, code: "session_not_found", title: "Not Found" });
	});
});

describe("a conversation", () => {
	it("before any answer, the last assistant text is null, not left out (pi's JSON drops it)", async () => {
		const fresh = await gw.session();
		const res = await gw.api(`/v1/sessions/${fresh}/last-assistant-text`);
		expect(res.status).toBe(200);
		expect(res.body).toEqual({ text: null });
	});

	it("prompt → 202 run id → settles → messages hold the reply", async () => {
		const res = await post("/prompt", { message: "hello gateway" });
		expect(res.status).toBe(202);
		expect(res.body.runId).toMatch(/^gw_/);
		expect(res.body.disposition).toBe("started");
		await until(
			async () =>
				(await get("/state")).body.isStreaming === false && (await gw.api(`/v1/sessions/${id}`)).body.status === "idle",
		);
		const messages = (await get("/messages")).body.messages;
		const last = messages.at(-1);
		expect(last.role).toBe("assistant");
		expect(last.content[0].text).toBe("Hello from the pi-gateway demo model. You said: hello gateway");
		expect((await get("/last-assistant-text")).body.text).toBe(last.content[0].text);
	});

	it("runs bash and returns its output", async () => {
		const res = await post("/bash", { command: "echo from-bash && pwd" });
		expect(res.status).toBe(200);
		expect(res.body).toMatchObject({ exitCode: 0, cancelled: false, truncated: false });
		expect(res.body.output).toBe(`from-bash\n${join(gw.workspace, id)}\n`);
	});

	it("a prompt that makes the model call the bash tool runs the tool", async () => {
		const res = await post("/prompt?wait=true", { message: "bash: echo tool-ran" });
		expect(res.status).toBe(200);
		expect(res.body.text).toBe("The command finished. Output:\ntool-ran");
		const roles = res.body.messages.map((m: { role: string }) => m.role);
		expect(roles).toEqual(["user", "assistant", "toolResult", "assistant"]);
	});

	it("models, set model, thinking levels", async () => {
		const models = await get("/models");
		expect(models.body.models.map((m: { id: string }) => m.id)).toContain("demo");
		const set = await put("/model", { provider: "pi-gateway-demo", modelId: "demo" });
		expect(set.status).toBe(200);
		expect(set.body).toMatchObject({ id: "demo", provider: "pi-gateway-demo" });
		expect((await put("/model", { provider: "nope", modelId: "x" })).body).toMatchObject({
			status: 422,
			code: "pi_refused",
			detail: "Model not found: nope/x",
		});
		expect((await post("/model/cycle")).status).toBe(200);
		expect((await get("/thinking-levels")).body.levels).toEqual(["off"]);
		expect((await put("/thinking-level", { level: "off" })).status).toBe(204);
		expect((await post("/thinking-level/cycle")).status).toBe(200);
	});

	it("queue modes, auto compaction, auto retry, retry abort, clear queue, abort, bash abort", async () => {
		expect((await put("/steering-mode", { mode: "all" })).status).toBe(204);
		expect((await put("/follow-up-mode", { mode: "one-at-a-time" })).status).toBe(204);
		expect((await get("/state")).body.steeringMode).toBe("all");
		expect((await put("/auto-compaction", { enabled: false })).status).toBe(204);
		expect((await get("/state")).body.autoCompactionEnabled).toBe(false);
		expect((await put("/auto-retry", { enabled: true })).status).toBe(204);
		expect((await post("/retry/abort")).status).toBe(204);
		expect((await post("/queue/clear")).body).toEqual({ steering: [], followUp: [] });
		expect((await post("/abort")).status).toBe(204);
		expect((await post("/bash/abort")).status).toBe(204);
	});

	it("name, stats, entries, tree, slash commands, export", async () => {
		expect((await put("/name", { name: "renamed" })).status).toBe(204);
		expect((await get("/state")).body.sessionName).toBe("renamed");
		await until(async () => (await gw.api(`/v1/sessions/${id}`)).body.name === "renamed");
		const stats = await get("/stats");
		expect(stats.body.userMessages).toBeGreaterThanOrEqual(2);
		const entries = await get("/entries");
		expect(entries.body.entries.length).toBeGreaterThan(2);
		const since = await get(`/entries?since=${entries.body.entries.at(-2).id}`);
		expect(since.body.entries).toHaveLength(1);
		expect((await get("/entries?since=zzz")).status).toBe(422);
		const tree = await get("/tree");
		expect(tree.body.leafId).toBe(entries.body.leafId);
		expect(Array.isArray((await get("/slash-commands")).body.commands)).toBe(true);
		const exported = await post("/export-html", { outputPath: "out/../session.html" });
		expect(exported.status).toBe(200);
		expect(exported.body.path).toBe(join(gw.workspace, id, "session.html"));
		expect(readFileSync(exported.body.path, "utf8")).toContain("<html");
		expect((await post("/export-html", { outputPath: "/tmp/escape.html" })).status).toBe(403);
	});

	it("fork messages, fork, clone, compact, switch, new session", async () => {
		const forkable = await get("/fork-messages");
		expect(forkable.body.messages[0].text).toBe("hello gateway");
		const fork = await post("/fork", { entryId: forkable.body.messages[0].entryId });
		expect(fork.body).toMatchObject({ text: "hello gateway", cancelled: false });
		// A fork is a new pi session that pi saves only once it has a message of its own.
		expect((await post("/prompt?wait=true", { message: "on the fork" })).status).toBe(200);
		const before = (await get("/state")).body.sessionFile;
		expect((await post("/clone")).body).toEqual({ cancelled: false });
		const cloned = (await get("/state")).body.sessionFile;
		expect(cloned).not.toBe(before);
		expect((await post("/switch", { sessionPath: before })).body).toEqual({ cancelled: false });
		expect((await get("/state")).body.sessionFile).toBe(before);
		expect((await post("/switch", { sessionPath: "/etc/passwd" })).status).toBe(403);
		await post("/prompt?wait=true", { message: "something to compact" });
		const compact = await post("/compact", {});
		expect(compact.status).toBe(200);
		expect(compact.body.summary).toContain("Hello from the pi-gateway demo model");
		expect((await post("/new", {})).body).toEqual({ cancelled: false });
		expect((await get("/messages")).body.messages).toEqual([]);
	});

	it("follow-up and steer reach pi", async () => {
		const prompt = await post("/prompt", { message: "slow: 8" });
		expect(prompt.status).toBe(202);
		const busy = await post("/prompt", { message: "not now" });
		expect(busy.status).toBe(409);
		expect(busy.body.code).toBe("agent_busy");
		// Each joins the running run: its answer names that run, not an id of its own no run has.
		const steer = await post("/steer", { message: "steering" });
		expect(steer.body).toMatchObject({ disposition: "queued", runId: prompt.body.runId });
		const followUp = await post("/follow-up", { message: "afterwards" });
		expect(followUp.body).toMatchObject({ disposition: "queued", runId: prompt.body.runId });
		await until(async () => (await gw.api(`/v1/sessions/${id}`)).body.status === "idle", 15_000);
		const texts = (await get("/messages")).body.messages
			.filter((m: { role: string }) => m.role === "user")
			.map((m: { content: { text: string }[] }) => m.content[0]?.text);
		expect(texts).toEqual(["slow: 8", "steering", "afterwards"]);
	});

	it("a follow-up's changes are the run's it joined, under the runId its answer gave", async () => {
		const prompt = await post("/prompt", { message: "bash: sleep 2; echo a > f1" });
		expect(prompt.status).toBe(202);
		const followUp = await post("/follow-up", { message: "bash: echo b > f2" });
		expect(followUp.body.runId).toBe(prompt.body.runId);
		await until(async () => (await gw.api(`/v1/sessions/${id}`)).body.status === "idle", 15_000);
		const changes = await get(`/changes?runId=${followUp.body.runId}`);
		expect(changes.status).toBe(200);
		expect(changes.body.files.map((f: { path: string }) => f.path)).toEqual(["f1", "f2"]);
	});

	it("the raw rpc route sends a validated command", async () => {
		const res = await post("/rpc", { type: "get_state" });
		expect(res.status).toBe(200);
		expect(res.body.sessionId).toMatch(/[0-9a-f-]{36}/);
	});
});

describe("a crash", () => {
	it("pi killed → the session shows crashed and the next command gets 502 with pi's stderr", async () => {
		const victim = await gw.session({ persist: false });
		const { body } = await gw.api(`/v1/sessions/${victim}`);
		process.kill(body.pid, "SIGKILL");
		const after = await until(async () => {
			const s = (await gw.api(`/v1/sessions/${victim}`)).body;
			return s.status === "crashed" && s;
		});
		expect(after.exit).toMatchObject({ code: null, signal: "SIGKILL" });
		const next = await gw.api(`/v1/sessions/${victim}/state`);
		expect(next.status).toBe(502);
		expect(next.body).toMatchObject({ code: "pi_crashed", status: 502 });
		expect(typeof next.body.stderr).toBe("string");
		// The other session is untouched.
		expect((await get("/state")).status).toBe(200);
	});
});

describe("invalid input never reaches pi", () => {
	it("400s bad bodies with the issues listed, and pi's stdin never sees them", async () => {
		const since = record.mark();
		const cases: [string, string, unknown][] = [
			["POST", "/prompt", {}],
			["POST", "/prompt", { message: 42 }],
			["POST", "/prompt", { message: "x", streamingBehavior: "sideways" }],
			["POST", "/prompt", { message: "x", extra: true }],
			["PUT", "/thinking-level", { level: "huge" }],
			["POST", "/bash", { command: "" }],
			["PUT", "/auto-retry", { enabled: "yes" }],
			["POST", "/rpc", { type: "prompt", message: 1 }],
			["POST", "/rpc", { type: "get_state", id: "mine" }],
			["POST", "/rpc", { nope: 1 }],
		];
		for (const [method, path, json] of cases) {
			const res = await gw.api(`/v1/sessions/${id}${path}`, { method, json });
			expect(res.status, `${method} ${path} ${JSON.stringify(json)}`).toBe(400);
			expect(res.body.code).toBe("invalid_input");
			expect(res.body.issues.length).toBeGreaterThan(0);
		}
		const notJson = await gw.api(`/v1/sessions/${id}/prompt`, {
			method: "POST",
			body: "{not json",
			headers: { "content-type": "application/json" },
		});
		expect(notJson.status).toBe(400);
		expect(since()).toEqual([]);
		expect(sent().some((c) => c.message === 42 || c.level === "huge")).toBe(false);
	});
});
