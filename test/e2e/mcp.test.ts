import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { type CallToolResult, McpError } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { fixtures, noPool, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { collect } from "../helpers/sse.ts";

// Issue 44 item 3: /mcp driven by the official MCP SDK's client, unchanged, against a real gateway
// (README's layout) with real pi and the demo model. Each MCP tool is a client of the gateway's own
// API as the caller: what it makes is an ordinary session, and another principal's is not there.
let gw: TestGateway;
let dir: string;
const key = { alice: "", bob: "" };
const open: Client[] = [];

beforeAll(async () => {
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-mcp-"));
	const keysFile = join(dir, "keys.json");
	const full = ["sessions:read", "sessions:write", "approvals:read", "approvals:answer"] as const;
	key.alice = createKey(keysFile, "alice", [...full]).secret;
	key.bob = createKey(keysFile, "bob", [...full]).secret;
	gw = await startTestGateway({ ...noPool, keysFile });
});
afterAll(async () => {
	await Promise.all(open.map((c) => c.close().catch(() => {})));
	await gw?.stop();
	rmSync(dir, { recursive: true, force: true });
});

const as = (who: keyof typeof key) => ({ authorization: `Bearer ${key[who]}` });

/** The SDK's own transport and client, as Claude Code or any MCP host would use them. */
function transportFor(who: keyof typeof key, sessionId?: string) {
	return new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), { sessionId, requestInit: { headers: as(who) } });
}
async function connect(who: keyof typeof key) {
	const transport = transportFor(who);
	const client = new Client({ name: "mcp-test", version: "1.0.0" });
	await client.connect(transport);
	open.push(client);
	return { client, transport };
}

type Structured = Record<string, any>;
async function call(client: Client, name: string, args: Record<string, unknown>, progress?: string[]) {
	const result = (await client.callTool(
		{ name, arguments: args },
		undefined,
		progress ? { onprogress: (p) => progress.push(String(p.message)) } : undefined,
	)) as CallToolResult;
	return {
		...result,
		value: result.structuredContent as Structured,
		text: (result.content as { text: string }[])[0]?.text as string,
	};
}

describe("/mcp with the official SDK", () => {
	it("answers an MCP request without a credential 401, as every route does", async () => {
		const res = await fetch(`${gw.url}/mcp`, {
			method: "POST",
			headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
			body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
		});
		expect(res.status).toBe(401);
		expect(res.headers.get("content-type")).toBe("application/problem+json");
		expect(((await res.json()) as { code: string }).code).toBe("unauthorized");
		// The same client with a credential is served.
		expect((await connect("alice")).transport.sessionId).toMatch(/^mcp_/);
		const client = new Client({ name: "mcp-test", version: "1.0.0" });
		const refused = await client
			.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`)))
			.catch((error) => error);
		expect(refused).toBeInstanceOf(StreamableHTTPError);
		expect((refused as StreamableHTTPError).code).toBe(401);
	});

	it("lists its tools and the session resource template", async () => {
		const { client, transport } = await connect("alice");
		expect(transport.sessionId).toMatch(/^mcp_[\w-]+$/);
		expect(client.getServerVersion()?.name).toBe("pi-gateway");
		expect(client.getInstructions()).toContain("start_session");
		const tools = (await client.listTools()).tools;
		expect(tools.map((t) => t.name).sort()).toEqual([
			"answer_approval",
			"get_changes",
			"list_approvals",
			"list_sessions",
			"prompt",
			"start_session",
			"wait_for_run",
		]);
		expect(tools.find((t) => t.name === "prompt")?.inputSchema.required).toEqual(["sessionId", "message"]);
		expect((await client.listResourceTemplates()).resourceTemplates).toEqual([
			expect.objectContaining({ name: "session", uriTemplate: "pi-gateway://sessions/{id}" }),
		]);
	});

	it("starts a session the REST API shows, prompts it with progress, and reads it as a resource", async () => {
		const { client } = await connect("alice");
		const started = await call(client, "start_session", { name: "via mcp" });
		expect(started.isError).toBeFalsy();
		const id = started.value.sessionId as string;
		expect(started.value).toMatchObject({ name: "via mcp", status: "idle", uri: `pi-gateway://sessions/${id}` });
		expect(started.content).toContainEqual(expect.objectContaining({ type: "resource_link", uri: started.value.uri }));
		// An ordinary session of alice's, made through her own key.
		expect((await gw.api(`/v1/sessions/${id}`, { headers: as("alice") })).body).toMatchObject({ name: "via mcp" });

		const progress: string[] = [];
		const run = await call(client, "prompt", { sessionId: id, message: "hello" }, progress);
		expect(run.isError).toBeFalsy();
		expect(run.value).toMatchObject({
			sessionId: id,
			runId: expect.any(String),
			status: "settled",
			aborted: false,
			text: "Hello from the pi-gateway demo model. You said: hello",
			stopReason: "stop",
			usage: expect.objectContaining({ totalTokens: expect.any(Number) }),
		});
		expect(JSON.parse(run.text)).toEqual(run.value);
		expect(progress).toContain("assistant: Hello from the pi-gateway demo model. You said: hello");

		const listed = (await client.listResources()).resources;
		expect(listed).toContainEqual(expect.objectContaining({ uri: `pi-gateway://sessions/${id}`, title: "via mcp" }));
		const read = await client.readResource({ uri: `pi-gateway://sessions/${id}` });
		expect(read.contents[0]?.mimeType).toBe("application/json");
		expect(JSON.parse((read.contents[0] as { text: string }).text)).toMatchObject({
			id,
			status: "idle",
			lastText: "Hello from the pi-gateway demo model. You said: hello",
			approvals: [],
		});
		// Every call went through the API as alice: the audit log says so.
		const audit = await gw.api(`/v1/audit?principal=alice&sessionId=${id}`);
		expect(audit.body.entries.map((e: { action: string }) => e.action)).toEqual(
			expect.arrayContaining(["sessions.create", "sessions.promptStream"]),
		);
	});

	it("answers an approval through MCP: prompt stops at the dialog, answer_approval and wait_for_run finish the run", async () => {
		const { client } = await connect("alice");
		const started = await call(client, "start_session", { extensions: ["permission-gate"] });
		const id = started.value.sessionId as string;
		mkdirSync(join(started.value.cwd, "scratch"));
		writeFileSync(join(started.value.cwd, "scratch", "file.txt"), "x");

		const progress: string[] = [];
		const held = await call(client, "prompt", { sessionId: id, message: "bash: rm -rf ./scratch" }, progress);
		expect(held.value).toMatchObject({ status: "awaiting_approval", tools: ["bash: rm -rf ./scratch"] });
		const [approval] = held.value.approvals;
		expect(approval).toMatchObject({ sessionId: id, method: "select", options: ["Allow", "Block"], status: "pending" });
		expect(progress).toContain(`waiting for an answer: ${approval.title}`);
		// The console and REST see the same dialog waiting.
		expect((await gw.api(`/v1/sessions/${id}`, { headers: as("alice") })).body).toMatchObject({ status: "waiting" });
		expect((await call(client, "list_approvals", {})).value.approvals).toEqual([approval]);
		expect(existsSync(join(started.value.cwd, "scratch"))).toBe(true);

		const answered = await call(client, "answer_approval", { sessionId: id, approvalId: approval.id, value: "Allow" });
		expect(answered.value).toMatchObject({ status: "answered", answer: { value: "Allow" }, resolvedBy: "alice" });
		const after: string[] = [];
		const done = await call(client, "wait_for_run", { sessionId: id, runId: held.value.runId }, after);
		expect(done.value).toMatchObject({
			runId: held.value.runId,
			status: "settled",
			text: "The command finished. Output:\n(no output)",
		});
		expect(after.length).toBeGreaterThan(0);
		expect(existsSync(join(started.value.cwd, "scratch"))).toBe(false);
		// A run's changes, read through MCP.
		const changes = await call(client, "get_changes", { sessionId: id, runId: held.value.runId });
		expect(changes.value.files).toEqual([expect.objectContaining({ path: "scratch/file.txt", status: "deleted" })]);
		// The run is done: nothing waits in this MCP session any more.
		const again = await call(client, "wait_for_run", { sessionId: id, runId: held.value.runId });
		expect(again).toMatchObject({ isError: true, text: expect.stringContaining("404 run_not_found") });
	});

	it("a cancelled prompt aborts its run", async () => {
		const { client } = await connect("alice");
		const id = (await call(client, "start_session", {})).value.sessionId as string;
		const cancel = new AbortController();
		const events = await gw.fetch(`/v1/sessions/${id}/events?types=agent_settled`, {
			headers: { ...as("alice"), accept: "text/event-stream" },
		});
		const settled = collect(events, (f) => f.event === "agent_settled");
		const pending = client
			.callTool({ name: "prompt", arguments: { sessionId: id, message: "bash: sleep 300" } }, undefined, {
				signal: cancel.signal,
			})
			.catch((error) => error);
		await until(async () => (await gw.api(`/v1/sessions/${id}`, { headers: as("alice") })).body.status === "running");
		cancel.abort();
		expect(await pending).toBeInstanceOf(Error);
		expect((await settled).at(-1)?.json).toMatchObject({ type: "agent_settled", aborted: true });
	});
});

describe("docs/mcp.md", () => {
	it("its SDK script prints what the page shows", async () => {
		const page = readFileSync(join(import.meta.dirname, "../../docs/mcp.md"), "utf8");
		const script = /```js\n([\s\S]*?)\n```/.exec(page)?.[1] as string;
		const shown = /it prints:\n\n```text\n([\s\S]*?)\n```/.exec(page)?.[1] as string;
		expect(script.split("\n").length).toBeLessThan(20);
		const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script], {
			cwd: join(import.meta.dirname, "../.."),
			env: { ...process.env, PI_GATEWAY_URL: gw.url, PI_GATEWAY_KEY: gw.config.token },
		});
		expect(stdout.trimEnd()).toBe(shown);
	});
});

describe("two principals", () => {
	it("alice's MCP session is hers: bob's request with its id is 404, and her session goes on", async () => {
		const alice = await connect("alice");
		const aliceMcp = alice.transport.sessionId as string;
		const raw = await fetch(`${gw.url}/mcp`, {
			method: "POST",
			headers: {
				...as("bob"),
				"content-type": "application/json",
				accept: "application/json, text/event-stream",
				"mcp-session-id": aliceMcp,
			},
			body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/list" }),
		});
		expect(raw.status).toBe(404);
		expect(((await raw.json()) as { code: string }).code).toBe("mcp_session_not_found");
		// The SDK's client resuming with her id (as a host reconnecting would) meets the same 404.
		const bob = new Client({ name: "mcp-test", version: "1.0.0" });
		await bob.connect(transportFor("bob", aliceMcp));
		const refused = await bob.listTools().catch((error) => error);
		expect(refused).toBeInstanceOf(StreamableHTTPError);
		expect((refused as StreamableHTTPError).code).toBe(404);
		// Nor can bob end it.
		const ended = await fetch(`${gw.url}/mcp`, {
			method: "DELETE",
			headers: { ...as("bob"), "mcp-session-id": aliceMcp },
		});
		expect(ended.status).toBe(404);
		expect((await alice.client.listTools()).tools.length).toBeGreaterThan(0);
	});

	it("bob cannot read, prompt or answer alice's session through MCP: not found, as an unknown id", async () => {
		const alice = await connect("alice");
		const alices = (await call(alice.client, "start_session", {})).value.sessionId as string;
		const { client: bob } = await connect("bob");
		const unknown = "ses_NoSuchSession";

		expect((await bob.listResources()).resources.map((r) => r.uri)).not.toContain(`pi-gateway://sessions/${alices}`);
		for (const id of [alices, unknown]) {
			const read = await bob.readResource({ uri: `pi-gateway://sessions/${id}` }).catch((error) => error);
			expect(read).toBeInstanceOf(McpError);
			expect(read).toMatchObject({
				code: -32002,
				message: `MCP error -32002: Resource not found: pi-gateway://sessions/${id}`,
			});
			const prompted = await call(bob, "prompt", { sessionId: id, message: "not yours" });
			expect(prompted).toMatchObject({ isError: true, text: `404 session_not_found: No session ${id}` });
			const changes = await call(bob, "get_changes", { sessionId: id });
			expect(changes).toMatchObject({ isError: true, text: `404 session_not_found: No session ${id}` });
		}
		// Her session never saw bob's prompt.
		const messages = await gw.api(`/v1/sessions/${alices}/messages`, { headers: as("alice") });
		expect(JSON.stringify(messages.body)).not.toContain("not yours");

		// A dialog of hers: bob neither sees nor answers it.
		const gated = (await call(alice.client, "start_session", { extensions: ["permission-gate"] })).value.sessionId;
		const held = await call(alice.client, "prompt", { sessionId: gated, message: "bash: rm -rf ./nothing" });
		const [approval] = held.value.approvals;
		expect((await call(bob, "list_approvals", {})).value.approvals).toEqual([]);
		const answered = await call(bob, "answer_approval", { sessionId: gated, approvalId: approval.id, value: "Allow" });
		expect(answered).toMatchObject({ isError: true, text: `404 session_not_found: No session ${gated}` });
		const still = await gw.api(`/v1/sessions/${gated}/approvals/${approval.id}`, { headers: as("alice") });
		expect(still.body.status).toBe("pending");
		expect(
			(await bob.callTool({ name: "wait_for_run", arguments: { sessionId: gated, runId: held.value.runId } })).isError,
		).toBe(true);
	});
});

describe("fair shares", () => {
	let small: TestGateway;
	beforeAll(async () => {
		small = await startTestGateway({
			...noPool,
			keysFile: join(dir, "keys.json"),
			piCommand: [process.execPath, join(fixtures, "stub-pi.mjs"), "ok"],
			mcpMaxSessionsPerPrincipal: 1,
		});
	});
	afterAll(() => small?.stop());

	it("a principal at its share gives up its own idlest MCP session for a new one; another's stays", async () => {
		const opened = async (who: keyof typeof key) => {
			const client = new Client({ name: "mcp-test", version: "1.0.0" });
			await client.connect(
				new StreamableHTTPClientTransport(new URL(`${small.url}/mcp`), { requestInit: { headers: as(who) } }),
			);
			return client;
		};
		const bob = await opened("bob");
		const first = await opened("alice");
		const second = await opened("alice");
		const gone = await first.listTools().catch((error) => error);
		expect(gone).toBeInstanceOf(StreamableHTTPError);
		expect((gone as StreamableHTTPError).code).toBe(404);
		expect((await second.listTools()).tools.length).toBe(7);
		expect((await bob.listTools()).tools.length).toBe(7);
		await Promise.all([bob, second].map((c) => c.close()));
	});
});
