import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PiGateway, type ToolCall } from "../../src/client/index.ts";
import { createKey } from "../../src/http/auth/keys.ts";
import { fixtures, noPool, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { startReceiver } from "../helpers/receiver.ts";
import { collect } from "../helpers/sse.ts";

// Client tools on real pi with the demo model (`tool: NAME {json}`), over plain HTTP: the call is a
// resource and an event, the program's answer is the tool's result, and nobody else answers it.
let gw: TestGateway;
let id: string;
const lookupPrice = {
	name: "lookup_price",
	description: "The price of a product in EUR, by its SKU",
	parameters: { type: "object", properties: { sku: { type: "string" } }, required: ["sku"] },
};

beforeAll(async () => {
	gw = await startTestGateway(noPool);
	id = await gw.session({ clientTools: [lookupPrice] });
});
afterAll(() => gw?.stop());

const base = () => `/v1/sessions/${id}`;
const answer2 = (sessionId: string, callId: string, json: unknown) =>
	gw.api(`/v1/sessions/${sessionId}/tool-calls/${encodeURIComponent(callId)}`, { method: "POST", json });
const answer = (callId: string, json: unknown) =>
	gw.api(`${base()}/tool-calls/${encodeURIComponent(callId)}`, { method: "POST", json });
/** The session's next pending call, through the cross-session long-poll. */
const nextPending = (sessionId = id) =>
	until(async () => {
		const { status, body } = await gw.api("/v1/tool-calls?status=pending&wait=5");
		expect(status).toBe(200);
		return body.toolCalls.find((c: { sessionId: string }) => c.sessionId === sessionId);
	});

describe("a client tool round trip", () => {
	it("the model's call is a pending resource and an event; the answer is the tool's result and the run's text", async () => {
		const before = (await gw.api(base())).body.lastEventId;
		const types = "tool_call_requested,tool_call_resolved,tool_execution_end,agent_settled";
		const events = await gw.fetch(`${base()}/events?after=${before}&types=${types}`, {
			headers: { accept: "text/event-stream" },
		});
		const frames = collect(events, (f) => f.event === "agent_settled");
		const run = gw.api(`${base()}/prompt?wait=true`, {
			method: "POST",
			json: { message: 'tool: lookup_price {"sku":"A-1"}' },
		});

		const pending = await nextPending();
		expect(pending).toEqual({
			id: expect.stringMatching(/^demo_/),
			sessionId: id,
			runId: expect.any(String),
			name: "lookup_price",
			arguments: { sku: "A-1" },
			// The tool's declaration, for whoever answers by hand (the console checks the arguments against it).
			parameters: lookupPrice.parameters,
			status: "pending",
			createdAt: expect.any(String),
			answeredAt: null,
			result: null,
			resolvedBy: null,
		});
		expect((await gw.api(`${base()}/tool-calls?status=pending`)).body).toEqual({ toolCalls: [pending] });
		expect((await gw.api(`${base()}/tool-calls/${pending.id}`)).body).toEqual(pending);
		expect((await gw.api(base())).body).toMatchObject({ status: "waiting", pendingApprovals: 0, pendingToolCalls: 1 });
		// Never an approval.
		expect((await gw.api(`${base()}/approvals`)).body.approvals).toEqual([]);

		// A wrong shape is 422 and leaves it pending.
		for (const bad of [{}, { output: 5 }, { output: "x", isError: "no" }, { output: [{ type: "video" }] }]) {
			const refused = await answer(pending.id, bad);
			expect(refused.status).toBe(422);
			expect(refused.body.code).toBe("invalid_tool_call_answer");
		}
		expect((await gw.api(`${base()}/tool-calls/${pending.id}`)).body.status).toBe("pending");

		const answered = await answer(pending.id, { output: "19.90" });
		expect(answered.status).toBe(200);
		expect(answered.body).toMatchObject({
			id: pending.id,
			status: "answered",
			result: { output: "19.90", isError: false },
			resolvedBy: "admin",
		});
		const again = await answer(pending.id, { output: "20.00" });
		expect(again.status).toBe(409);
		expect(again.body.code).toBe("tool_call_already_answered");

		const result = await run;
		expect(result.status).toBe(200);
		expect(result.body.text).toBe("19.90");
		const seen = await frames;
		expect(seen.map((f) => f.event)).toEqual([
			"stream_open",
			"tool_call_requested",
			"tool_call_resolved",
			"tool_execution_end",
			"agent_settled",
		]);
		expect(seen[1]?.json).toMatchObject({
			type: "tool_call_requested",
			sessionId: id,
			toolCallId: pending.id,
			name: "lookup_price",
			arguments: { sku: "A-1" },
			runId: pending.runId,
		});
		expect(seen[2]?.json).toMatchObject({ toolCallId: pending.id, status: "answered" });
		expect(seen[3]?.json).toMatchObject({ toolCallId: pending.id, isError: false });
	});

	it("an error answer reaches the model as an error result", async () => {
		const run = gw.api(`${base()}/prompt?wait=true`, {
			method: "POST",
			json: { message: 'tool: lookup_price {"sku":"nope"}' },
		});
		const pending = await nextPending();
		const answered = await answer(pending.id, { output: [{ type: "text", text: "unknown SKU" }], isError: true });
		expect(answered.status).toBe(200);
		expect((await run).body.text).toBe("Error: unknown SKU");
	});

	it("an abort cancels the pending call: the run ends, and a late answer is 410", async () => {
		const run = gw.api(`${base()}/prompt?wait=true`, {
			method: "POST",
			json: { message: 'tool: lookup_price {"sku":"B-2"}' },
		});
		const pending = await nextPending();
		expect((await gw.api(`${base()}/abort`, { method: "POST" })).status).toBeLessThan(300);
		const cancelled = (await gw.api(`${base()}/tool-calls/${pending.id}`)).body;
		expect(cancelled).toMatchObject({
			status: "cancelled",
			resolvedBy: "gateway-abort",
			result: { isError: true, output: expect.stringContaining("aborted") },
		});
		const late = await answer(pending.id, { output: "too late" });
		expect(late.status).toBe(410);
		expect(late.body.code).toBe("tool_call_gone");
		expect((await run).status).toBe(200);
		await until(async () => (await gw.api(base())).body.status === "idle");
	});

	it("an unknown call is 404; the list filters by status", async () => {
		expect((await answer("nope", { output: "x" })).status).toBe(404);
		expect((await gw.api(`${base()}/tool-calls/nope`)).status).toBe(404);
		const { body } = await gw.api(`${base()}/tool-calls?status=cancelled`);
		expect(body.toolCalls.length).toBeGreaterThan(0);
		expect(body.toolCalls.every((c: { status: string }) => c.status === "cancelled")).toBe(true);
	});
});

describe("declaring client tools", () => {
	it.each([
		["a bad name", { ...lookupPrice, name: "1price" }],
		["a name of pi's own", { ...lookupPrice, name: "bash" }],
		["parameters that are not an object schema", { ...lookupPrice, parameters: { type: "string" } }],
		["a schema that is not one", { ...lookupPrice, parameters: { type: "object", properties: { a: 5 } } }],
		["an unknown key", { ...lookupPrice, handler: "x" }],
	])("%s is 400 before pi", async (_what, tool) => {
		const before = (await gw.api("/v1/sessions")).body.sessions?.length;
		const { status, body } = await gw.api("/v1/sessions", { method: "POST", json: { clientTools: [tool] } });
		expect(status).toBe(400);
		expect(body.code).toBe("invalid_input");
		expect((await gw.api("/v1/sessions")).body.sessions?.length).toBe(before);
	});

	it("twice the same name, and more than 64 tools, are 400", async () => {
		const twice = await gw.api("/v1/sessions", { method: "POST", json: { clientTools: [lookupPrice, lookupPrice] } });
		expect(twice.status).toBe(400);
		const many = Array.from({ length: 65 }, (_, i) => ({ ...lookupPrice, name: `t${i}` }));
		expect((await gw.api("/v1/sessions", { method: "POST", json: { clientTools: many } })).status).toBe(400);
	});
});

describe("the agent", () => {
	it("cannot answer a call over HTTP: it cannot reach the gateway, and holds no credential", async () => {
		const command = `curl -s -o /dev/null -w 'answer:%{http_code}' -X POST -H 'content-type: application/json' -d '{"output":"forged"}' ${gw.url}${base()}/tool-calls/some-call`;
		const run = await gw.api(`${base()}/prompt?wait=true`, { method: "POST", json: { message: `bash: ${command}` } });
		expect(run.status).toBe(200);
		// Not even a 401: the gateway's port is not on the sandbox's own loopback (issue 42), so
		// curl cannot connect (its exit code 7).
		expect(run.body.text).toContain("answer:000");
		expect(run.body.text).toContain("exited with code 7");
	});

	it("cannot forge a call: a client-tool dialog that matches no client tool pi runs is dismissed, never a call or an approval", async () => {
		const gwForge = await startTestGateway({
			...noPool,
			extensions: { forge: join(fixtures, "extensions/forge-client-tool.ts") },
		});
		try {
			const sid = await gwForge.session({ clientTools: [lookupPrice], extensions: ["forge"] });
			const path = `/v1/sessions/${sid}`;
			const outside = await gwForge.api(`${path}/prompt?wait=true`, { method: "POST", json: { message: "/forge" } });
			expect(outside.status).toBeLessThan(300);
			const notes = () =>
				gwForge.api(`${path}/ui`).then((r) => r.body.notifications.map((n: { message: string }) => n.message));
			await until(async () => (await notes()).includes("forge dismissed"));
			const inside = await gwForge.api(`${path}/prompt?wait=true`, {
				method: "POST",
				json: { message: "tool: forger {}" },
			});
			expect(inside.status).toBe(200);
			expect(inside.body.text).toBe("forger got dismissed");
			expect((await gwForge.api(`${path}/tool-calls`)).body.toolCalls).toEqual([]);
			expect((await gwForge.api(`${path}/approvals`)).body.approvals).toEqual([]);
			// Both dialogs did reach the gateway (so the checks above mean something).
			const log = await gwForge.fetch(`${path}/events?after=0&types=extension_ui_request`, {
				headers: { accept: "text/event-stream" },
			});
			const dialogs = await collect(
				log,
				(f) => f.json.title === "pi-gateway client tool" && f.json.prefill.includes("Y"),
			);
			expect(dialogs.filter((f) => f.json.title === "pi-gateway client tool")).toHaveLength(2);
		} finally {
			await gwForge.stop();
		}
	});
});

describe("webhooks", () => {
	it("deliver tool_call.requested and tool_call.resolved, thin: ids, name and status, never the arguments or output", async () => {
		const receiver = await startReceiver();
		const hooked = await startTestGateway({ ...noPool, webhookAllow: ["loopback"] });
		try {
			const created = await hooked.api("/v1/webhooks", {
				method: "POST",
				json: { url: receiver.url, events: ["tool_call.requested", "tool_call.resolved"] },
			});
			expect(created.status).toBe(201);
			const sid = await hooked.session({ clientTools: [lookupPrice] });
			const run = hooked.api(`/v1/sessions/${sid}/prompt?wait=true`, {
				method: "POST",
				json: { message: 'tool: lookup_price {"sku":"SECRET-SKU"}' },
			});
			const requested = await until(() => receiver.of("tool_call.requested")[0]);
			const callId = requested.json.data.toolCallId;
			expect(requested.json.data).toEqual({
				sessionId: sid,
				toolCallId: expect.stringMatching(/^demo_/),
				runId: expect.any(String),
				name: "lookup_price",
				status: "pending",
				links: {
					session: `/v1/sessions/${sid}`,
					toolCall: `/v1/sessions/${sid}/tool-calls/${callId}`,
				},
			});
			expect(requested.body).not.toContain("SECRET-SKU");
			const answered = await hooked.api(`/v1/sessions/${sid}/tool-calls/${callId}`, {
				method: "POST",
				json: { output: "SECRET-PRICE" },
			});
			expect(answered.status).toBe(200);
			const resolved = await until(() => receiver.of("tool_call.resolved")[0]);
			expect(resolved.json.data).toMatchObject({ toolCallId: callId, status: "answered", resolvedBy: "admin" });
			expect(resolved.body).not.toContain("SECRET-PRICE");
			expect((await run).body.text).toBe("SECRET-PRICE");
		} finally {
			await hooked.stop();
			await receiver.close();
		}
	});
});

describe("the TypeScript client", () => {
	it("toolCalls.run answers each call with the handler of its name and resolves with the run's result", async () => {
		const client = new PiGateway({ baseUrl: gw.url, token: gw.config.token });
		const session = await client.createSession({ clientTools: [lookupPrice] });
		const seen: ToolCall[] = [];
		const tools = {
			lookup_price: async (args: { sku: string }, call: ToolCall) => {
				seen.push(call);
				return `price of ${args.sku}: 19.90`;
			},
		};
		const result = await client.toolCalls.run(session.id, { message: 'tool: lookup_price {"sku":"A-1"}' }, tools);
		expect(result).toMatchObject({ text: "price of A-1: 19.90" });
		expect(seen).toEqual([
			expect.objectContaining({ name: "lookup_price", arguments: { sku: "A-1" }, status: "pending" }),
		]);
		expect(await client.toolCalls.list(session.id)).toEqual([
			expect.objectContaining({
				id: seen[0]?.id,
				status: "answered",
				result: { output: "price of A-1: 19.90", isError: false },
			}),
		]);

		// A handler that throws, and a tool with no handler, are error results the model reads.
		const failing = await client.toolCalls.run(
			session.id,
			{ message: 'tool: lookup_price {"sku":"B"}' },
			{
				lookup_price: () => {
					throw new Error("the price list is down");
				},
			},
		);
		expect(failing).toMatchObject({ text: "Error: the price list is down" });
		const unhandled = await client.toolCalls.run(session.id, { message: 'tool: lookup_price {"sku":"C"}' }, {});
		expect(unhandled).toMatchObject({ text: "Error: This program has no handler for the tool lookup_price" });
		await client.deleteSession(session.id);
	});
});

describe("the Python client", () => {
	it("tool_calls.run answers calls with handlers (sync, and AsyncPiGateway with coroutine handlers); answer, inbox, get, 409 and 422 (clients/python/tests/live_tool_calls.py)", {
		timeout: 75_000,
		retry: 1,
	}, async () => {
		const pkg = resolve(import.meta.dirname, "../../clients/python");
		const result = await promisify(execFile)(
			"python3",
			["-m", "unittest", "discover", "-v", "-s", join(pkg, "tests"), "-p", "live_tool_calls.py"],
			{
				env: {
					...process.env,
					PYTHONPATH: join(pkg, "src"),
					PYTHONDONTWRITEBYTECODE: "1",
					PI_GATEWAY_URL: gw.url,
					...(gw.config.token ? { PI_GATEWAY_TOKEN: gw.config.token } : {}),
				},
				// About 7 s alone. It hung until the limit in 2 of 6 runs under load: AsyncToolCalls.run's
				// poller missed its cancel (Python 3.11's wait_for can swallow one) and polled forever;
				// it stops on a flag now (14 of 14 runs passed after). One retry stays as a guard.
				timeout: 60_000,
			},
		).catch((error) => error);
		expect(result.stderr, result.stdout).toMatch(/\nOK\n$/);
		expect(result.stderr).toMatch(/^Ran 3 tests/m);
	});
});

describe("nobody answers", () => {
	it("past --approval-timeout-ms the model gets an error result that says so; a late answer is 410", async () => {
		const timed = await startTestGateway({ ...noPool, approvalTimeoutMs: 300 });
		try {
			const sid = await timed.session({ clientTools: [lookupPrice] });
			const run = await timed.api(`/v1/sessions/${sid}/prompt?wait=true`, {
				method: "POST",
				json: { message: 'tool: lookup_price {"sku":"T"}' },
			});
			expect(run.status).toBe(200);
			expect(run.body.text).toBe("Error: No answer from the program within 300 ms (the gateway's approval timeout)");
			const [call] = (await timed.api(`/v1/sessions/${sid}/tool-calls`)).body.toolCalls;
			expect(call).toMatchObject({ status: "cancelled", resolvedBy: "gateway-policy", result: { isError: true } });
			const late = await timed.api(`/v1/sessions/${sid}/tool-calls/${call.id}`, {
				method: "POST",
				json: { output: "x" },
			});
			expect(late.status).toBe(410);
		} finally {
			await timed.stop();
		}
	});

	it("a waited prompt whose deadline passes with a call pending answers 202; the call stays pending and answerable", async () => {
		const sid = await gw.session({ clientTools: [lookupPrice] });
		const waited = await gw.api(`/v1/sessions/${sid}/prompt`, {
			method: "POST",
			headers: { prefer: "wait=1" },
			json: { message: 'tool: lookup_price {"sku":"W"}' },
		});
		expect(waited.status).toBe(202);
		// On a busy machine the run may not have reached its call within the 1 s: the call comes
		// later, pending all the same (the 202 did not cancel the run).
		const call = await until(async () => {
			const listed = await gw.api(`/v1/sessions/${sid}/tool-calls?status=pending&wait=5`);
			return listed.status === 200 && listed.body.toolCalls[0];
		});
		expect(call).toMatchObject({ runId: waited.body.runId, status: "pending" });
		expect((await answer2(sid, call.id, { output: "later" })).status).toBe(200);
		await until(async () => (await gw.api(`/v1/sessions/${sid}/last-assistant-text`)).body.text === "later");
	});

	it("pi's exit cancels a pending call (resolvedBy pi-exit)", async () => {
		const sid = await gw.session({ clientTools: [lookupPrice] });
		void gw.api(`/v1/sessions/${sid}/prompt`, { method: "POST", json: { message: 'tool: lookup_price {"sku":"K"}' } });
		const call = await nextPending(sid);
		const pid = (await gw.api(`/v1/sessions/${sid}`)).body.pid as number;
		process.kill(pid, "SIGKILL");
		const settled = await until(async () => {
			const { body } = await gw.api(`/v1/sessions/${sid}/tool-calls/${call.id}`);
			return body.status !== "pending" && body;
		});
		expect(settled).toMatchObject({ status: "cancelled", resolvedBy: "pi-exit", result: { isError: true } });
		const late = await gw.api(`/v1/sessions/${sid}/tool-calls/${call.id}`, { method: "POST", json: { output: "x" } });
		expect(late.status).toBe(410);
	});
});

describe("a gateway restart", () => {
	it("keeps a session's client tools: the resumed pi offers them again and their calls work", async () => {
		const root = mkdtempSync(join(tmpdir(), "pi-gateway-ctools-restart-"));
		mkdirSync(join(root, "agent"));
		const dirs = { dataDir: join(root, "data"), piAgentDir: join(root, "agent") };
		try {
			const first = await startTestGateway({ ...noPool, ...dirs });
			const sid = await first.session({ clientTools: [lookupPrice] });
			expect(
				(await first.api(`/v1/sessions/${sid}/prompt?wait=true`, { method: "POST", json: { message: "echo: hi" } }))
					.status,
			).toBe(200);
			await first.stop();
			const second = await startTestGateway({ ...noPool, ...dirs });
			try {
				const run = second.api(`/v1/sessions/${sid}/prompt?wait=true`, {
					method: "POST",
					json: { message: 'tool: lookup_price {"sku":"R"}' },
				});
				const call = await until(async () => {
					const listed = await second.api(`/v1/sessions/${sid}/tool-calls?status=pending&wait=5`);
					return listed.status === 200 && listed.body.toolCalls[0];
				});
				expect(call).toMatchObject({ name: "lookup_price", arguments: { sku: "R" } });
				await second.api(`/v1/sessions/${sid}/tool-calls/${call.id}`, { method: "POST", json: { output: "again" } });
				expect((await run).body.text).toBe("again");
			} finally {
				await second.stop();
			}
		} finally {
			rmSync(root, { recursive: true, force: true });
		}
	});
});

describe("principals", () => {
	it("a call is its session owner's: another principal neither lists it nor reads or answers it (404); a reader cannot answer (403)", async () => {
		const dir = mkdtempSync(join(tmpdir(), "pi-gateway-ctools-keys-"));
		const keysFile = join(dir, "keys.json");
		const full = ["sessions:read", "sessions:write"] as const;
		const alice = { authorization: `Bearer ${createKey(keysFile, "alice", [...full]).secret}` };
		const bob = { authorization: `Bearer ${createKey(keysFile, "bob", [...full]).secret}` };
		const reader = { authorization: `Bearer ${createKey(keysFile, "reader", ["sessions:read"]).secret}` };
		const keyed = await startTestGateway({ ...noPool, keysFile });
		try {
			const created = await keyed.api("/v1/sessions", {
				method: "POST",
				headers: bob,
				json: { clientTools: [lookupPrice] },
			});
			expect(created.status).toBe(201);
			const sid = created.body.id as string;
			const shared = await keyed.api(`/v1/sessions/${sid}/access`, {
				method: "PUT",
				headers: bob,
				json: { grants: [{ principal: "reader", can: ["read"] }] },
			});
			expect(shared.status).toBe(200);
			void keyed.api(`/v1/sessions/${sid}/prompt`, {
				method: "POST",
				headers: bob,
				json: { message: 'tool: lookup_price {"sku":"P"}' },
			});
			const call = await until(
				async () => (await keyed.api("/v1/tool-calls?status=pending&wait=5", { headers: bob })).body.toolCalls[0],
			);
			expect((await keyed.api("/v1/tool-calls?status=pending", { headers: alice })).body.toolCalls).toEqual([]);
			const path = `/v1/sessions/${sid}/tool-calls/${call.id}`;
			expect((await keyed.api(path, { headers: alice })).status).toBe(404);
			expect((await keyed.api(path, { method: "POST", headers: alice, json: { output: "x" } })).status).toBe(404);
			expect((await keyed.api(path, { headers: reader })).body.status).toBe("pending");
			expect((await keyed.api(path, { method: "POST", headers: reader, json: { output: "x" } })).status).toBe(403);
			const answered = await keyed.api(path, { method: "POST", headers: bob, json: { output: "ok" } });
			expect(answered.body).toMatchObject({ status: "answered", resolvedBy: "bob" });
		} finally {
			await keyed.stop();
			rmSync(dir, { recursive: true, force: true });
		}
	});
});
