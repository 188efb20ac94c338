import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { Readable, Writable } from "node:stream";
import {
	type ClientConnection,
	client,
	ndJsonStream,
	type RequestPermissionRequest,
	type RequestPermissionResponse,
	type SessionNotification,
} from "@agentclientprotocol/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fixtures, noPool, sleep, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { gatewayEntry } from "../helpers/gateway-entry.ts";
import { startProxy, type TcpProxy } from "../helpers/tcp-proxy.ts";

/**
 * `pi-gateway acp` as an editor runs it: a child process speaking JSON-RPC lines on stdio, driven
 * from the SDK's client side, in front of a live gateway with real pi and the demo model.
 */

const repo = resolve(import.meta.dirname, "../..");
const token = "acp-test-token-0123456789abcdef";

interface Editor {
	child: ChildProcess;
	connection: ClientConnection;
	updates: SessionNotification[];
	/** Every message in the order the editor saw it (updates and permission requests). */
	wire: { kind: "update" | "permission"; body: unknown }[];
	permissions: RequestPermissionRequest[];
	stderr: () => string;
	/** How the editor answers permission requests: by option kind, cancelled, or not until the bridge withdraws it. */
	answer: "allow_once" | "allow_always" | "reject_once" | "cancelled" | "hold";
	/** Permission requests the bridge withdrew ($/cancel_request) while the editor held them. */
	withdrawn: number;
	elicitations: unknown[];
	stop(): Promise<void>;
}

const editors = new Set<Editor>();

async function launch(url: string, extra: string[] = [], capabilities: Record<string, unknown> = {}): Promise<Editor> {
	const child = spawn(process.execPath, [gatewayEntry, "acp", "--url", url, ...extra], {
		cwd: repo,
		env: { ...process.env, PI_GATEWAY_TOKEN: token },
		stdio: ["pipe", "pipe", "pipe"],
	});
	let stderr = "";
	child.stderr?.on("data", (chunk) => {
		stderr += chunk;
	});
	const editor = {
		child,
		updates: [],
		wire: [],
		permissions: [],
		stderr: () => stderr,
		answer: "allow_once",
		withdrawn: 0,
		elicitations: [],
	} as unknown as Editor;
	const app = client({ name: "test-editor" })
		.onNotification("session/update", ({ params }) => {
			editor.updates.push(params);
			editor.wire.push({ kind: "update", body: params });
		})
		.onRequest("session/request_permission", async ({ params, signal }): Promise<RequestPermissionResponse> => {
			editor.permissions.push(params);
			editor.wire.push({ kind: "permission", body: params });
			if (editor.answer === "cancelled") return { outcome: { outcome: "cancelled" } };
			if (editor.answer === "hold") {
				await new Promise((r) => signal.addEventListener("abort", r, { once: true }));
				editor.withdrawn++;
				return { outcome: { outcome: "selected", optionId: "option:0" } }; // a late "Allow"
			}
			const option = params.options.find((o) => o.kind === editor.answer);
			return { outcome: { outcome: "selected", optionId: option?.optionId ?? "nope" } };
		})
		.onRequest("elicitation/create", ({ params }) => {
			editor.elicitations.push(params);
			return { action: "accept", content: { text: `typed for ${params.message}` } };
		});
	editor.connection = app.connect(
		ndJsonStream(
			Writable.toWeb(child.stdin as NodeJS.WritableStream as never) as WritableStream<Uint8Array>,
			Readable.toWeb(child.stdout as never) as unknown as ReadableStream<Uint8Array>,
		),
	);
	editor.stop = async () => {
		editors.delete(editor);
		editor.connection.close();
		if (child.exitCode === null && child.signalCode === null) {
			const exited = new Promise((r) => child.once("exit", r));
			child.kill("SIGTERM");
			await exited;
		}
	};
	editors.add(editor);
	const init = await editor.connection.agent.request("initialize", {
		protocolVersion: 1,
		clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false, ...capabilities },
	});
	expect(init.protocolVersion).toBe(1);
	return editor;
}

const textOf = (updates: SessionNotification[], kind = "agent_message_chunk") =>
	updates
		.map((n) => n.update)
		.filter((u) => u.sessionUpdate === kind)
		.map((u) => {
			const content =
				"content" in u && !Array.isArray(u.content) ? (u.content as { type?: string; text?: string }) : undefined;
			return content?.type === "text" ? (content.text ?? "") : "";
		})
		.join("");

function toolUpdates(updates: SessionNotification[]) {
	return updates
		.map((n) => n.update)
		.filter((u) => u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update");
}

/** Per tool call, the statuses in the order sent: never backwards. */
function assertMonotonic(updates: SessionNotification[]) {
	const rank: Record<string, number> = { pending: 0, in_progress: 1, completed: 2, failed: 2 };
	const last = new Map<string, number>();
	for (const u of toolUpdates(updates)) {
		const status = "status" in u ? u.status : undefined;
		if (!status) continue;
		const before = last.get(u.toolCallId) ?? -1;
		expect(rank[status], `${u.toolCallId} went ${status} after rank ${before}`).toBeGreaterThanOrEqual(before);
		expect(before, `${u.toolCallId} changed after it ended`).toBeLessThan(2);
		last.set(u.toolCallId, rank[status] ?? -1);
	}
}

let gw: TestGateway;

beforeAll(async () => {
	gw = await startTestGateway({
		...noPool,
		token,
		extensions: { dialogs: join(fixtures, "extensions/dialogs.ts") },
	} as never);
});

afterAll(async () => {
	for (const editor of [...editors]) await editor.stop();
	await gw?.stop();
});

describe("pi-gateway acp", () => {
	it("initialize says protocol 1, loadSession and pi's prompt capabilities; stdout carries only protocol lines", async () => {
		const editor = await launch(gw.url);
		const init = await editor.connection.agent.request("initialize", { protocolVersion: 1 });
		expect(init).toMatchObject({
			protocolVersion: 1,
			agentInfo: { name: "pi-gateway" },
			agentCapabilities: { loadSession: true, promptCapabilities: { image: true, embeddedContext: true } },
		});
		expect(editor.stderr()).toContain("bridging stdio");
		await editor.stop();
	});

	it("stdout is JSON-RPC lines only, even with a session and a run (raw stdio, as an editor reads it)", async () => {
		const child = spawn(process.execPath, [gatewayEntry, "acp", "--url", gw.url], {
			cwd: repo,
			env: { ...process.env, PI_GATEWAY_TOKEN: token },
			stdio: ["pipe", "pipe", "pipe"],
		});
		let out = "";
		child.stdout.on("data", (chunk) => {
			out += chunk;
		});
		const send = (message: unknown) => child.stdin.write(`${JSON.stringify(message)}\n`);
		const answer = (id: number) =>
			until(() => out.split("\n").some((l) => l.startsWith(`{"jsonrpc":"2.0","id":${id},`)));
		try {
			send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1 } });
			await answer(1);
			send({ jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: "/tmp", mcpServers: [] } });
			await answer(2);
			const sessionId = JSON.parse(out.split("\n").find((l) => l.includes('"id":2,')) as string).result.sessionId;
			send({
				jsonrpc: "2.0",
				id: 3,
				method: "session/prompt",
				params: { sessionId, prompt: [{ type: "text", text: "count: 3" }] },
			});
			await answer(3);
			const lines = out.split("\n").filter(Boolean);
			expect(lines.length).toBeGreaterThan(4);
			for (const line of lines) expect(JSON.parse(line).jsonrpc).toBe("2.0");
		} finally {
			const exited = new Promise((r) => child.once("exit", r));
			child.stdin.end(); // an editor closing the pipe ends the bridge
			await exited;
		}
	});

	it("streams text as agent_message_chunk, lists pi's commands, and never echoes the prompt", async () => {
		const editor = await launch(gw.url);
		const created = await editor.connection.agent.request("session/new", { cwd: "/home/dev/project", mcpServers: [] });
		const { sessionId } = created;
		expect(sessionId).toMatch(/^ses_/);
		// The model as a config option (the demo model has no thinking levels beyond off: no thought option).
		expect(created.configOptions).toEqual([
			{
				id: "model",
				name: "Model",
				category: "model",
				type: "select",
				currentValue: "pi-gateway-demo/demo",
				options: [{ value: "pi-gateway-demo/demo", name: "Offline demo model" }],
			},
		]);
		const set = await editor.connection.agent.request("session/set_config_option", {
			sessionId,
			configId: "model",
			value: "pi-gateway-demo/demo",
		});
		expect(set.configOptions[0]).toMatchObject({ currentValue: "pi-gateway-demo/demo" });
		await expect(
			editor.connection.agent.request("session/set_config_option", {
				sessionId,
				configId: "model",
				value: "nope/none",
			}),
		).rejects.toThrow();
		const echo = await editor.connection.agent.request("session/prompt", {
			sessionId,
			prompt: [{ type: "text", text: "echo: Hello from an editor" }],
		});
		expect(echo.stopReason).toBe("end_turn");
		expect(textOf(editor.updates)).toBe("Hello from an editor");
		const announced = editor.updates.filter((n) => n.update.sessionUpdate === "available_commands_update");
		editor.updates.length = 0;
		const count = await editor.connection.agent.request("session/prompt", {
			sessionId,
			prompt: [{ type: "text", text: "count: 5" }],
		});
		expect(count.stopReason).toBe("end_turn");
		const chunks = editor.updates.filter((n) => n.update.sessionUpdate === "agent_message_chunk");
		expect(chunks.length).toBe(5);
		expect(textOf(editor.updates)).toBe("1 2 3 4 5");
		expect(editor.updates.every((n) => n.sessionId === sessionId)).toBe(true);
		expect(editor.updates.some((n) => n.update.sessionUpdate === "user_message_chunk")).toBe(false);
		// pi's slash commands, announced after session/new
		const commands = announced[0]?.update;
		expect(
			commands?.sessionUpdate === "available_commands_update" && commands.availableCommands.map((c) => c.name),
		).toContain("mcp");
		await editor.stop();
	});

	it("reports a tool call: bash as execute with the command as title, its output, statuses forwards only", async () => {
		const editor = await launch(gw.url);
		const { sessionId } = await editor.connection.agent.request("session/new", { cwd: "/tmp", mcpServers: [] });
		const res = await editor.connection.agent.request("session/prompt", {
			sessionId,
			prompt: [{ type: "text", text: "bash: echo hi" }],
		});
		expect(res.stopReason).toBe("end_turn");
		const tools = toolUpdates(editor.updates);
		const call = tools.find((u) => u.sessionUpdate === "tool_call");
		expect(call).toMatchObject({ kind: "execute", title: "echo hi", status: "pending" });
		const end = tools.at(-1);
		expect(end).toMatchObject({ sessionUpdate: "tool_call_update", toolCallId: call?.toolCallId, status: "completed" });
		expect(JSON.stringify(end && "content" in end ? end.content : null)).toContain("hi\\n");
		assertMonotonic(editor.updates);
		expect(textOf(editor.updates)).toBe("The command finished. Output:\nhi");
		await editor.stop();
	});

	it("a permission allowed runs the command, one rejected does not; the tool_call comes first with the same id", async () => {
		const editor = await launch(gw.url, ["--extensions", "permission-gate"]);
		const { sessionId } = await editor.connection.agent.request("session/new", { cwd: "/tmp", mcpServers: [] });
		const cwd = (await gw.api(`/v1/sessions/${sessionId}`)).body.cwd as string;
		for (const [answer, removed] of [
			["reject_once", false],
			["allow_once", true],
		] as const) {
			mkdirSync(join(cwd, "x"), { recursive: true });
			editor.answer = answer;
			editor.updates.length = 0;
			editor.wire.length = 0;
			editor.permissions.length = 0;
			const res = await editor.connection.agent.request("session/prompt", {
				sessionId,
				prompt: [{ type: "text", text: "bash: rm -rf ./x" }],
			});
			expect(res.stopReason).toBe("end_turn");
			expect(editor.permissions).toHaveLength(1);
			const request = editor.permissions[0] as RequestPermissionRequest;
			expect(request.toolCall).toMatchObject({ kind: "execute" });
			expect(request.toolCall.title).toContain("rm -rf ./x");
			expect(request.options.map((o) => [o.name, o.kind])).toEqual([
				["Allow", "allow_once"],
				["Block", "reject_once"],
				["Allow (always, this session)", "allow_always"],
			]);
			const at = editor.wire.findIndex((m) => m.kind === "permission");
			const announced = editor.wire
				.slice(0, at)
				.some(
					(m) =>
						m.kind === "update" &&
						(m.body as SessionNotification).update.sessionUpdate === "tool_call" &&
						((m.body as SessionNotification).update as { toolCallId: string }).toolCallId ===
							request.toolCall.toolCallId,
				);
			expect(announced).toBe(true);
			expect(existsSync(join(cwd, "x"))).toBe(!removed);
			assertMonotonic(editor.updates);
			// The approval is an ordinary one: answered, by this bridge's principal.
			const { body } = await gw.api(`/v1/sessions/${sessionId}/approvals`);
			expect(body.approvals.at(-1)).toMatchObject({
				status: "answered",
				answer: { value: answer === "allow_once" ? "Allow" : "Block" },
			});
			if (!removed) expect(textOf(editor.updates)).toContain("Blocked by the permission gate");
		}
		await editor.stop();
	});

	it("always allow is remembered by the gateway for the session: the next same dialog is not asked again", async () => {
		const editor = await launch(gw.url, ["--extensions", "permission-gate"]);
		const { sessionId } = await editor.connection.agent.request("session/new", { cwd: "/tmp", mcpServers: [] });
		const cwd = (await gw.api(`/v1/sessions/${sessionId}`)).body.cwd as string;
		editor.answer = "allow_always";
		for (const round of [1, 2]) {
			mkdirSync(join(cwd, "x"), { recursive: true });
			const res = await editor.connection.agent.request("session/prompt", {
				sessionId,
				prompt: [{ type: "text", text: "bash: rm -rf ./x" }],
			});
			expect(res.stopReason).toBe("end_turn");
			expect(existsSync(join(cwd, "x")), `round ${round}`).toBe(false);
		}
		expect(editor.permissions).toHaveLength(1);
		const { body } = await gw.api(`/v1/sessions/${sessionId}/approvals`);
		expect(body.approvals.map((a: { answer: unknown }) => a.answer)).toEqual([{ value: "Allow" }, { value: "Allow" }]);
		await editor.stop();
	});

	it("an extension command's dialogs: select as a permission request, input and editor as form elicitation, else dismissed", async () => {
		const withForms = await launch(gw.url, ["--extensions", "dialogs"], { elicitation: { form: {} } });
		const plain = await launch(gw.url, ["--extensions", "dialogs"]);
		for (const [editor, expected] of [
			[withForms, { color: "red", name: "typed for Your name?", notes: "typed for Edit the notes" }],
			[plain, { color: "red", name: null, notes: null }],
		] as const) {
			const { sessionId } = await editor.connection.agent.request("session/new", { cwd: "/tmp", mcpServers: [] });
			const res = await editor.connection.agent.request("session/prompt", {
				sessionId,
				prompt: [{ type: "text", text: "/trio" }],
			});
			expect(res.stopReason).toBe("end_turn");
			expect(editor.permissions.at(-1)?.options.map((o) => o.name)).toEqual([
				"red",
				"green",
				"blue",
				"red (always, this session)",
				"green (always, this session)",
				"blue (always, this session)",
			]);
			const ui = await until(async () => {
				const { body } = await gw.api(`/v1/sessions/${sessionId}/ui`);
				return (body.notifications as { message: string }[]).find((n) => n.message.startsWith("trio "));
			});
			expect(JSON.parse(ui.message.slice(5))).toEqual(expected);
			// The dialogs' own tool calls all ended.
			assertMonotonic(editor.updates);
			const open = toolUpdates(editor.updates)
				.filter((u) => u.sessionUpdate === "tool_call")
				.map((u) => u.toolCallId);
			for (const id of open)
				expect(
					toolUpdates(editor.updates)
						.filter((u) => u.toolCallId === id)
						.at(-1),
				).toMatchObject({ status: "completed" });
		}
		expect(withForms.elicitations).toHaveLength(2);
		expect(textOf(plain.updates)).toContain("which this editor cannot answer");
		await withForms.stop();
		await plain.stop();
	});

	it("a dialog answered elsewhere first wins: the editor's request is withdrawn and its late answer changes nothing", async () => {
		const editor = await launch(gw.url, ["--extensions", "permission-gate"]);
		const { sessionId } = await editor.connection.agent.request("session/new", { cwd: "/tmp", mcpServers: [] });
		const cwd = (await gw.api(`/v1/sessions/${sessionId}`)).body.cwd as string;
		mkdirSync(join(cwd, "y"), { recursive: true });
		editor.answer = "hold";
		const prompt = editor.connection.agent.request("session/prompt", {
			sessionId,
			prompt: [{ type: "text", text: "bash: rm -rf ./y" }],
		});
		await until(() => editor.permissions.length === 1);
		// The approval shows in the inbox like any other, and the inbox answers first.
		const { body: inbox } = await gw.api("/v1/approvals?status=pending");
		const approval = inbox.approvals.find((a: { sessionId: string }) => a.sessionId === sessionId);
		expect(approval).toMatchObject({ method: "select", options: ["Allow", "Block"] });
		const answered = await gw.api(`/v1/sessions/${sessionId}/approvals/${approval.id}`, {
			method: "POST",
			json: { value: "Block", by: "inbox" },
		});
		expect(answered.status).toBe(200);
		expect((await prompt).stopReason).toBe("end_turn");
		expect(editor.withdrawn).toBe(1);
		const final = (await gw.api(`/v1/sessions/${sessionId}/approvals/${approval.id}`)).body;
		expect(final).toMatchObject({ status: "answered", answer: { value: "Block" }, note: "inbox" });
		expect(existsSync(join(cwd, "y"))).toBe(true);
		// The editor hears the outcome: the tool call failed, blocked.
		expect(toolUpdates(editor.updates).at(-1)).toMatchObject({ status: "failed" });
		await editor.stop();
	});

	it("cancel ends the turn as cancelled, also when it arrives before the run exists", async () => {
		const editor = await launch(gw.url);
		const { sessionId } = await editor.connection.agent.request("session/new", { cwd: "/tmp", mcpServers: [] });
		const prompt = editor.connection.agent.request("session/prompt", {
			sessionId,
			prompt: [{ type: "text", text: "slow: 50" }],
		});
		await until(() => textOf(editor.updates).length > 0);
		await editor.connection.agent.notify("session/cancel", { sessionId });
		expect((await prompt).stopReason).toBe("cancelled");
		expect(textOf(editor.updates).split(" ").length).toBeLessThan(50);
		// Cancel sent right behind the prompt, before the gateway has a run.
		const early = editor.connection.agent.request("session/prompt", {
			sessionId,
			prompt: [{ type: "text", text: "slow: 50" }],
		});
		await editor.connection.agent.notify("session/cancel", { sessionId });
		expect((await early).stopReason).toBe("cancelled");
		const session = (await gw.api(`/v1/sessions/${sessionId}`)).body;
		await until(async () => (await gw.api(`/v1/sessions/${sessionId}`)).body.status === "idle");
		expect(session.id).toBe(sessionId);
		// The session goes on.
		editor.updates.length = 0;
		const after = await editor.connection.agent.request("session/prompt", {
			sessionId,
			prompt: [{ type: "text", text: "echo: still here" }],
		});
		expect(after.stopReason).toBe("end_turn");
		expect(textOf(editor.updates)).toBe("still here");
		await editor.stop();
	});

	it("session/load after the bridge restarts replays the conversation before it returns, and the next prompt works", async () => {
		const first = await launch(gw.url);
		const { sessionId } = await first.connection.agent.request("session/new", { cwd: "/tmp", mcpServers: [] });
		await first.connection.agent.request("session/prompt", {
			sessionId,
			prompt: [{ type: "text", text: "echo: remember me" }],
		});
		await first.connection.agent.request("session/prompt", {
			sessionId,
			prompt: [{ type: "text", text: "bash: echo hi" }],
		});
		await first.stop();
		// The gateway may have stopped pi meanwhile; load resumes it either way.
		const second = await launch(gw.url);
		await second.connection.agent.request("session/load", { sessionId, cwd: "/tmp", mcpServers: [] });
		const replayed = [...second.updates];
		expect(textOf(replayed, "user_message_chunk")).toBe("echo: remember mebash: echo hi");
		expect(textOf(replayed)).toBe("remember meThe command finished. Output:\nhi");
		const tools = toolUpdates(replayed);
		expect(tools[0]).toMatchObject({ sessionUpdate: "tool_call", kind: "execute", title: "echo hi" });
		expect(tools.at(-1)).toMatchObject({ status: "completed" });
		second.updates.length = 0;
		const res = await second.connection.agent.request("session/prompt", {
			sessionId,
			prompt: [{ type: "text", text: "echo: continued" }],
		});
		expect(res.stopReason).toBe("end_turn");
		expect(textOf(second.updates)).toBe("continued");
		const messages = (await gw.api(`/v1/sessions/${sessionId}/messages`)).body.messages as { role: string }[];
		expect(messages.filter((m) => m.role === "user")).toHaveLength(3);
		await second.stop();
	});

	it("a gateway connection cut mid-run resumes with Last-Event-ID: nothing lost, nothing doubled", async () => {
		let proxy: TcpProxy | undefined;
		try {
			proxy = await startProxy(Number(new URL(gw.url).port));
			const editor = await launch(`http://127.0.0.1:${proxy.port}`);
			const { sessionId } = await editor.connection.agent.request("session/new", { cwd: "/tmp", mcpServers: [] });
			const prompt = editor.connection.agent.request("session/prompt", {
				sessionId,
				prompt: [{ type: "text", text: "slow: 30" }],
			});
			await until(() => textOf(editor.updates).split(" ").length >= 5);
			proxy.cut();
			await sleep(300);
			proxy.cut();
			expect((await prompt).stopReason).toBe("end_turn");
			expect(textOf(editor.updates)).toBe(Array.from({ length: 30 }, (_, i) => i + 1).join(" "));
			// Resumed as the client resumes a run: the same POST with Last-Event-ID, and pi got the prompt once.
			expect(
				proxy.requests.some(
					(r) => /last-event-id: \d+/i.test(r) && r.startsWith(`POST /v1/sessions/${sessionId}/prompt/stream`),
				),
			).toBe(true);
			const messages = (await gw.api(`/v1/sessions/${sessionId}/messages`)).body.messages as { role: string }[];
			expect(messages.filter((m) => m.role === "user")).toHaveLength(1);
			expect(editor.stderr()).toContain("reconnecting");
			await editor.stop();
		} finally {
			await proxy?.close();
		}
	});
});
