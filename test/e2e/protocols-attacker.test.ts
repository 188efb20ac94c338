import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey, revokeKeys } from "../../src/http/auth/keys.ts";
import { startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";

// Issue 44's protocol surfaces (OpenAI's routes, /mcp, fork-session, run cancel) reviewed as bob, an
// attacker with a key of his own on a gateway where alice works (README's layout, real pi, the demo
// model). Each test asserts the safe behaviour: what bob guesses or crafts names nothing of alice's,
// a reading key runs nothing, and what bob can make the gateway keep is bounded.
let gw: TestGateway;
let dir: string;
let keysFile: string;
const keys: Record<string, string> = {};
const demo = "pi-gateway-demo/demo";
const full = ["sessions:read", "sessions:write", "approvals:read", "approvals:answer"] as const;

beforeAll(async () => {
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-protocols-attacker-"));
	keysFile = join(dir, "keys.json");
	keys.alice = createKey(keysFile, "alice", [...full]).secret;
	keys.bob = createKey(keysFile, "bob", [...full]).secret;
	keys.bobReads = createKey(keysFile, "bob", ["sessions:read"]).secret;
	// Few subscribers a session: a stream held open by a refused request shows at once.
	gw = await startTestGateway({ keysFile, maxSubscribers: 4 });
});
afterAll(async () => {
	await gw?.stop();
	rmSync(dir, { recursive: true, force: true });
});

const as = (secret: string | undefined) => ({ authorization: `Bearer ${secret}` });
const post = (path: string, secret: string | undefined, json: unknown = {}) =>
	gw.api(path, { method: "POST", headers: as(secret), json });
const sessionOf = (responseId: string) => responseId.slice("resp_".length, responseId.lastIndexOf("."));
/** A refusal as the client sees it, without what names the thing asked for. */
const shape = (r: { status: number; body: { error?: { code?: string; param?: unknown; message?: string } } }) => ({
	status: r.status,
	code: r.body.error?.code,
	param: r.body.error?.param,
});

describe("bob's guessed and crafted ids", () => {
	it("answer alice's responses, sessions and runs exactly as ids that never existed, and leave them going", async () => {
		const started = await post("/v1/responses", keys.alice, { model: demo, input: "slow: 600", background: true });
		expect(started.status).toBe(200);
		const hers = started.body.id as string;
		const session = sessionOf(hers);
		expect(started.res.headers.get("x-pi-gateway-session")).toBe(session);
		const runId = await until(async () => {
			const { body } = await gw.api(`/v1/sessions/${session}`, { headers: as(keys.alice) });
			return body.currentRunId as string | null;
		});
		const never = `resp_ses_${"x".repeat(20)}.AAAAAAAA`;
		const neverSession = sessionOf(never);

		for (const [method, suffix] of [
			["GET", ""],
			["POST", "/cancel"],
			["DELETE", ""],
		] as const) {
			const theirs = await gw.api(`/v1/responses/${hers}${suffix}`, { method, headers: as(keys.bob) });
			const unknown = await gw.api(`/v1/responses/${never}${suffix}`, { method, headers: as(keys.bob) });
			expect(shape(theirs)).toEqual({ status: 404, code: "response_not_found", param: null });
			expect(shape(theirs)).toEqual(shape(unknown));
		}
		// Going on in her session: by a response id, by her session's id as a conversation.
		for (const [field, value, other] of [
			["previous_response_id", hers, never],
			["conversation", session, neverSession],
		] as const) {
			const theirs = await post("/v1/responses", keys.bob, { model: demo, input: "echo: mine", [field]: value });
			const unknown = await post("/v1/responses", keys.bob, { model: demo, input: "echo: mine", [field]: other });
			expect(theirs.status).toBe(404);
			expect(shape(theirs)).toEqual(shape(unknown));
			expect(JSON.stringify(theirs.body)).not.toContain(session);
		}
		// Her run cancelled, her session forked, by their ids: not found, as for a session never made.
		const cancel = await post(`/v1/sessions/${session}/runs/${runId}/cancel`, keys.bob);
		const cancelUnknown = await post(`/v1/sessions/${neverSession}/runs/${runId}/cancel`, keys.bob);
		expect(cancel.status).toBe(404);
		expect([cancel.status, cancel.body.code]).toEqual([cancelUnknown.status, cancelUnknown.body.code]);
		const fork = await post(`/v1/sessions/${session}/fork-session`, keys.bob);
		const forkUnknown = await post(`/v1/sessions/${neverSession}/fork-session`, keys.bob);
		expect(fork.status).toBe(404);
		expect([fork.status, fork.body.code]).toEqual([forkUnknown.status, forkUnknown.body.code]);

		// Nothing of that touched her response: it still goes, and she cancels it herself.
		const now = await gw.api(`/v1/responses/${hers}`, { headers: as(keys.alice) });
		expect(now.body).toMatchObject({ status: "in_progress" });
		expect((await post(`/v1/responses/${hers}/cancel`, keys.alice)).body).toMatchObject({ status: "cancelled" });
	});
});

describe("a session alice shares with bob to read", () => {
	it("his tool messages for her paused call answer nothing and hold none of her session's streams", async () => {
		const tools = [{ type: "function", name: "lookup", parameters: { type: "object", properties: {} } }];
		const paused = await post("/v1/responses", keys.alice, { model: demo, input: "tool: lookup {}", tools });
		const call = (paused.body.output as { type: string; call_id: string }[]).find((o) => o.type === "function_call");
		const session = sessionOf(paused.body.id);
		const grants = [{ principal: "bob", can: ["read"] }];
		const shared = await gw.api(`/v1/sessions/${session}/access`, {
			method: "PUT",
			headers: as(keys.alice),
			json: { grants },
		});
		expect(shared.status).toBe(200);
		const chatTools = [{ type: "function", function: { name: "lookup", parameters: { type: "object" } } }];
		for (let i = 0; i < 6; i++) {
			const his = await post("/v1/chat/completions", keys.bob, {
				model: demo,
				tools: chatTools,
				messages: [
					{ role: "user", content: "tool: lookup {}" },
					{ role: "tool", tool_call_id: call?.call_id, content: "forged" },
				],
			});
			expect(his.status).toBeGreaterThanOrEqual(400);
		}
		const pending = await gw.api(`/v1/sessions/${session}/tool-calls?status=pending`, { headers: as(keys.alice) });
		expect(pending.body.toolCalls).toHaveLength(1);
		// Her own stream of her session opens: bob's refused requests left no subscription behind.
		const res = await gw.fetch(`/v1/sessions/${session}/events`, { headers: as(keys.alice) });
		expect(res.status).toBe(200);
		await res.body?.cancel();
		await gw.api(`/v1/sessions/${session}?purge=true`, { method: "DELETE", headers: as(keys.alice) });
	});
});

describe("bob's fork of his own session, its folder made hostile by his agent", () => {
	it("copies files only: a FIFO, /proc links and links out are left out and named, and nothing hangs", async () => {
		const id = (await post("/v1/sessions", keys.bob)).body.id as string;
		const command = "mkfifo pipe; ln -s /proc/self/root root; ln -s /proc/1/environ env; ln -s .. up; echo x > f";
		const run = await post(`/v1/sessions/${id}/prompt?wait=true`, keys.bob, { message: `bash: ${command}` });
		expect(run.status).toBe(200);
		const forked = await post(`/v1/sessions/${id}/fork-session`, keys.bob);
		expect(forked.status).toBe(201);
		const out = "a link that leads out of the folder";
		expect(forked.body.folderCopy.skippedPaths).toEqual([
			{ path: "env", why: out },
			{ path: "pipe", why: "not a file, folder or link (a FIFO, socket or device)" },
			{ path: "root", why: out },
			{ path: "up", why: out },
		]);
		expect(forked.body.folderCopy).toMatchObject({ files: 1, links: 0 });
		for (const s of [id, forked.body.id])
			await gw.api(`/v1/sessions/${s}?purge=true`, { method: "DELETE", headers: as(keys.bob) });
	});
});

describe("a key with only sessions:read", () => {
	it("runs nothing through the OpenAI routes: no completion, no response, no resume of its own paused run", async () => {
		const chat = await post("/v1/chat/completions", keys.bobReads, {
			model: demo,
			messages: [{ role: "user", content: "echo: read" }],
		});
		expect(shape(chat)).toMatchObject({ status: 403, code: "insufficient_scope" });
		for (const extra of [{}, { background: true }]) {
			const response = await post("/v1/responses", keys.bobReads, { model: demo, input: "echo: read", ...extra });
			expect(shape(response)).toMatchObject({ status: 403, code: "insufficient_scope" });
		}
		// Bob's own response, paused at a function call, answered with his reading key: refused, the call waits on.
		const tools = [{ type: "function", name: "lookup", parameters: { type: "object", properties: {} } }];
		const paused = await post("/v1/responses", keys.bob, { model: demo, input: "tool: lookup {}", tools });
		const call = (paused.body.output as { type: string; call_id: string }[]).find((o) => o.type === "function_call");
		expect(call).toBeDefined();
		const resumed = await post("/v1/responses", keys.bobReads, {
			model: demo,
			previous_response_id: paused.body.id,
			input: [{ type: "function_call_output", call_id: call?.call_id, output: "42" }],
		});
		expect(resumed.status).toBe(403);
		const session = sessionOf(paused.body.id);
		const pending = await gw.api(`/v1/sessions/${session}/tool-calls?status=pending`, { headers: as(keys.bob) });
		expect(pending.body.toolCalls).toHaveLength(1);
		await gw.api(`/v1/sessions/${session}?purge=true`, { method: "DELETE", headers: as(keys.bob) });
	});
});

describe("a key with only sessions:read, through /mcp", () => {
	it("opens an MCP session, yet its tools start and prompt nothing: the REST API's 403", async () => {
		const transport = new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), {
			requestInit: { headers: as(keys.bobReads) },
		});
		const client = new Client({ name: "protocols-attacker", version: "1.0.0" });
		await client.connect(transport);
		try {
			const before = (await gw.api("/v1/sessions", { headers: as(keys.bob) })).body.sessions.length;
			const started = (await client.callTool({ name: "start_session", arguments: {} })) as CallToolResult;
			expect(started.isError).toBe(true);
			expect((started.content[0] as { text: string }).text).toMatch(/^403 insufficient_scope/);
			expect((await gw.api("/v1/sessions", { headers: as(keys.bob) })).body.sessions).toHaveLength(before);
			// His own session, made with his writing key: the reading key prompts nothing in it either.
			const own = (await post("/v1/sessions", keys.bob)).body.id as string;
			const prompt = { name: "prompt", arguments: { sessionId: own, message: "echo: read" } };
			const prompted = (await client.callTool(prompt)) as CallToolResult;
			expect((prompted.content[0] as { text: string }).text).toMatch(/^403 insufficient_scope/);
			const messages = await gw.api(`/v1/sessions/${own}/messages`, { headers: as(keys.bob) });
			expect(messages.body.messages).toEqual([]);
			await gw.api(`/v1/sessions/${own}?purge=true`, { method: "DELETE", headers: as(keys.bob) });
		} finally {
			await client.close();
		}
	});
});

describe("what a response keeps", () => {
	// The store keeps each principal's last 1000 responses in memory, metadata and instructions with
	// them: unbounded, bob's 1000 responses of 8 MiB bodies held 8 GB of the gateway's memory.
	it("takes metadata and instructions only within OpenAI's bounds", async () => {
		const big = "x".repeat(600);
		const tooMany = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, "v"]));
		for (const metadata of [{ key: big }, tooMany, { [big]: "v" }]) {
			const r = await post("/v1/responses", keys.bob, { model: demo, input: "echo: m", metadata });
			expect(shape(r)).toMatchObject({ status: 400, param: "metadata" });
		}
		const first = await post("/v1/responses", keys.bob, { model: demo, input: "echo: first" });
		expect(first.status).toBe(200);
		// Ignored when going on in a session, yet kept with the response: the same bound.
		const long = await post("/v1/responses", keys.bob, {
			model: demo,
			input: "echo: m",
			previous_response_id: first.body.id,
			instructions: "y".repeat(100_001),
		});
		expect(shape(long)).toMatchObject({ status: 400, param: "instructions" });
		const fine = await post("/v1/responses", keys.bob, {
			model: demo,
			input: "echo: kept",
			previous_response_id: first.body.id,
			metadata: { a: "b".repeat(512) },
		});
		expect(fine.body).toMatchObject({ status: "completed", output_text: "kept", metadata: { a: "b".repeat(512) } });
		await gw.api(`/v1/sessions/${sessionOf(first.body.id)}?purge=true`, { method: "DELETE", headers: as(keys.bob) });
	});
});

describe("a pathological text.format.schema", () => {
	it("is refused as the prompt route refuses it (2^40 ways to check one place), and leaves no session", async () => {
		const $defs = Object.fromEntries(
			Array.from({ length: 40 }, (_, i) => [
				`d${i}`,
				{ anyOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] },
			]),
		);
		const schema = { $defs: { ...$defs, d40: { type: "string" } }, $ref: "#/$defs/d0" };
		const before = (await gw.api("/v1/sessions", { headers: as(keys.bob) })).body.sessions.length;
		const text = { format: { type: "json_schema", name: "bomb", schema } };
		const r = await post("/v1/responses", keys.bob, { model: demo, input: "echo: {}", text });
		expect(shape(r)).toMatchObject({ status: 400, code: "invalid_output_schema" });
		expect((await gw.api("/v1/sessions", { headers: as(keys.bob) })).body.sessions).toHaveLength(before);
	});
});

describe("a revoked key", () => {
	it("its background response fails and its run stops", async () => {
		const temp = createKey(keysFile, "bob", [...full]);
		const started = await post("/v1/responses", temp.secret, { model: demo, input: "slow: 3000", background: true });
		expect(started.status).toBe(200);
		const session = sessionOf(started.body.id);
		await until(async () => (await gw.api(`/v1/sessions/${session}`, { headers: as(keys.bob) })).body.currentRunId);
		revokeKeys(keysFile, temp.record.id);
		// Bob's other key sees his session: the run he can no longer follow is stopped, not left going.
		await until(async () => {
			const { body } = await gw.api(`/v1/sessions/${session}`, { headers: as(keys.bob) });
			return body.status === "idle";
		}, 20_000);
		const { body } = await gw.api(`/v1/responses/${started.body.id}`, { headers: as(keys.bob) });
		expect(body).toMatchObject({ status: "failed", error: { code: "access_revoked" } });
		await gw.api(`/v1/sessions/${session}?purge=true`, { method: "DELETE", headers: as(keys.bob) });
	});
});
