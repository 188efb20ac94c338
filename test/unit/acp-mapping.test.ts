import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { SessionUpdate } from "@agentclientprotocol/sdk";
import { describe, expect, it } from "vitest";
import { initializeResponse, mapCwd } from "../../src/acp/agent.ts";
import { parseAcpArgs } from "../../src/acp/args.ts";
import { history } from "../../src/acp/history.ts";
import {
	closeOpenTools,
	emptyTurn,
	ignoredEvents,
	mapEvent,
	stopReason,
	type TurnState,
} from "../../src/acp/mapping.ts";
import {
	type Approval,
	answerFor,
	answerForElicitation,
	elicitationSchema,
	permissionChoices,
} from "../../src/acp/permissions.ts";
import { availableCommands, promptBody } from "../../src/acp/prompt.ts";

/**
 * The bridge's mapping, wire to wire: literal gateway events (recorded from real pi with the demo
 * model, in test/fixtures/acp/*.events.json) against the session/updates they must become
 * (*.updates.json, read and checked by hand).
 */
const fixtures = resolve(import.meta.dirname, "../fixtures/acp");
const load = (name: string) => JSON.parse(readFileSync(join(fixtures, name), "utf8"));

function run(events: Record<string, unknown>[], state: TurnState = emptyTurn): [TurnState, SessionUpdate[]] {
	const out: SessionUpdate[] = [];
	for (const event of events) {
		const [next, updates] = mapEvent(state, event);
		state = next;
		out.push(...updates);
	}
	return [state, out];
}

describe("events → session/update", () => {
	for (const name of ["bash-run", "echo-run", "edge"])
		it(`${name}: the recorded events give exactly the recorded updates`, () => {
			expect(run(load(`${name}.events.json`))[1]).toEqual(load(`${name}.updates.json`));
		});

	it("bash is execute with the command as title, then its output, completed", () => {
		const updates = run(load("bash-run.events.json"))[1];
		expect(updates[0]).toMatchObject({
			sessionUpdate: "tool_call",
			kind: "execute",
			title: "echo hi",
			status: "pending",
		});
		expect(updates.filter((u) => u.sessionUpdate === "tool_call_update").map((u) => "status" in u && u.status)).toEqual(
			["in_progress", "in_progress", "completed"],
		);
	});

	it("the live prompt is never echoed back as user_message_chunk", () => {
		for (const name of ["bash-run", "echo-run", "edge"])
			expect(run(load(`${name}.events.json`))[1].some((u) => u.sessionUpdate === "user_message_chunk")).toBe(false);
	});

	it("a status never goes backwards and an ended tool call gets nothing more", () => {
		const [state] = run(load("edge.events.json"));
		expect(state.get("call_edit")?.status).toBe("completed");
		const again = run(
			[
				{ type: "tool_execution_start", toolCallId: "call_edit", toolName: "edit", args: {} },
				{ type: "tool_execution_update", toolCallId: "call_edit", toolName: "edit", partialResult: { content: [] } },
				{ type: "tool_execution_end", toolCallId: "call_edit", toolName: "edit", result: {}, isError: true },
			],
			state,
		)[1];
		expect(again).toEqual([]);
	});

	it("ignored events are listed and give no update", () => {
		for (const type of ignoredEvents) expect(mapEvent(emptyTurn, { type })[1]).toEqual([]);
	});

	it("tool calls left open by an abort end failed", () => {
		const [state] = run([
			{ type: "tool_execution_start", toolCallId: "t1", toolName: "bash", args: { command: "sleep 9" } },
		]);
		expect(closeOpenTools(state)).toEqual([{ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "failed" }]);
		expect(closeOpenTools(run(load("bash-run.events.json"))[0])).toEqual([]);
	});

	it("stop reasons: abort → cancelled, length → max_tokens, refusal → refusal, else end_turn", () => {
		expect(stopReason(true, "stop")).toBe("cancelled");
		expect(stopReason(false, "aborted")).toBe("cancelled");
		expect(stopReason(false, "length")).toBe("max_tokens");
		expect(stopReason(false, "refusal")).toBe("refusal");
		expect(stopReason(false, "stop")).toBe("end_turn");
		expect(stopReason(false, "toolUse")).toBe("end_turn");
		expect(stopReason(false, undefined)).toBe("end_turn");
	});
});

describe("session/load: the conversation replayed", () => {
	it("GET …/messages (recorded) gives user and agent chunks and completed tool calls", () => {
		expect(history(load("messages.json"))).toEqual(load("messages.updates.json"));
	});
});

describe("permissions", () => {
	const gate: Approval = {
		id: "a1",
		method: "select",
		title: "Allow this bash command?\n\n  rm -rf ./x",
		options: ["Allow", "Block"],
		status: "pending",
	};

	it("select options become permission options, each with its answer; always only for allowing ones", () => {
		const choices = permissionChoices(gate);
		expect(choices).toEqual([
			{ option: { optionId: "option:0", name: "Allow", kind: "allow_once" }, answer: { value: "Allow" } },
			{ option: { optionId: "option:1", name: "Block", kind: "reject_once" }, answer: { value: "Block" } },
			{
				option: { optionId: "always:0", name: "Allow (always, this session)", kind: "allow_always" },
				answer: { value: "Allow", remember: "session" },
			},
		]);
		expect(answerFor(gate, choices, { outcome: "selected", optionId: "always:0" })).toEqual({
			value: "Allow",
			remember: "session",
		});
	});

	it("an unknown or cancelled answer denies", () => {
		const choices = permissionChoices(gate);
		expect(answerFor(gate, choices, { outcome: "cancelled" })).toEqual({ value: "Block" });
		expect(answerFor(gate, choices, { outcome: "selected", optionId: "option:7" })).toEqual({ value: "Block" });
		const neutral: Approval = { ...gate, options: ["Red", "Green"] };
		expect(answerFor(neutral, permissionChoices(neutral), { outcome: "cancelled" })).toEqual({ cancelled: true });
	});

	it("confirm is allow / always / reject", () => {
		const confirm: Approval = { id: "c", method: "confirm", title: "Deploy?", status: "pending" };
		const choices = permissionChoices(confirm);
		expect(choices.map((c) => [c.option.kind, c.answer])).toEqual([
			["allow_once", { confirmed: true }],
			["allow_always", { confirmed: true, remember: "session" }],
			["reject_once", { confirmed: false }],
		]);
		expect(answerFor(confirm, choices, { outcome: "cancelled" })).toEqual({ confirmed: false });
	});

	it("input dialogs: no permission options; a form elicitation with one text field", () => {
		const input: Approval = { id: "i", method: "input", title: "Branch name?", placeholder: "main", status: "pending" };
		expect(permissionChoices(input)).toEqual([]);
		expect(elicitationSchema(input)).toEqual({
			type: "object",
			properties: { text: { type: "string", title: "Branch name?", description: "main" } },
			required: ["text"],
		});
		expect(answerForElicitation({ action: "accept", content: { text: "dev" } })).toEqual({ value: "dev" });
		expect(answerForElicitation({ action: "decline" })).toEqual({ cancelled: true });
	});
});

describe("prompts, commands, cwd, arguments", () => {
	it("text as the message, images as images, embedded context as text, links as @uri", () => {
		expect(
			promptBody([
				{ type: "text", text: "Look:" },
				{ type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" },
				{ type: "resource", resource: { uri: "file:///p/a.ts", text: "let a = 1;" } },
				{ type: "resource_link", uri: "file:///p/b.ts", name: "b.ts" },
			]),
		).toEqual({
			message: 'Look:\n\n<context uri="file:///p/a.ts">\nlet a = 1;\n</context>\n\n@file:///p/b.ts',
			images: [{ type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" }],
		});
	});

	it("pi's slash commands become available commands", () => {
		expect(availableCommands([{ name: "mcp", description: "Manage MCP servers" }, { name: "x" }])).toEqual([
			{ name: "mcp", description: "Manage MCP servers", input: { hint: "arguments" } },
			{ name: "x", description: "", input: { hint: "arguments" } },
		]);
	});

	it("--cwd-map: the longest matching prefix, else the session's own folder (undefined)", () => {
		const map: [string, string][] = [
			["/home/me", "/srv/ws/me"],
			["/home/me/work/app", "/srv/ws/app"],
		];
		expect(mapCwd("/home/me/work/app/src", map)).toBe("/srv/ws/app/src");
		expect(mapCwd("/home/me/notes", map)).toBe("/srv/ws/me/notes");
		expect(mapCwd("/home/me", map)).toBe("/srv/ws/me");
		expect(mapCwd("/home/meow", map)).toBeUndefined();
		expect(mapCwd("/tmp", [])).toBeUndefined();
	});

	it("initialize: protocol 1, loadSession, images and embedded context", () => {
		expect(initializeResponse("1.2.3")).toMatchObject({
			protocolVersion: 1,
			agentInfo: { name: "pi-gateway", version: "1.2.3" },
			agentCapabilities: {
				loadSession: true,
				promptCapabilities: { image: true, audio: false, embeddedContext: true },
			},
		});
	});

	it("the credential comes from the environment or a file, never argv", () => {
		expect(() => parseAcpArgs(["--url", "http://gw", "--token", "s3cret"], {})).toThrow(/not on argv/);
		expect(() => parseAcpArgs(["--url=http://gw", "--token=s3cret"], {})).toThrow(/not on argv/);
		expect(parseAcpArgs(["--url", "http://gw"], { PI_GATEWAY_TOKEN: "from-env" }).token).toBe("from-env");
		const dir = mkdtempSync(join(tmpdir(), "acp-args-"));
		const file = join(dir, "token");
		writeFileSync(file, "from-file\n");
		try {
			expect(
				parseAcpArgs(["--url", "http://gw", "--token-file", file], { PI_GATEWAY_DATA_DIR: "/nonexistent" }).token,
			).toBe("from-file");
		} finally {
			rmSync(dir, { recursive: true, force: true });
		}
		const args = parseAcpArgs(
			[
				"--url",
				"https://gw.example",
				"--extensions",
				"permission-gate,x",
				"--model",
				"anthropic/claude-x",
				"--cwd-map",
				"/a=/b",
			],
			{ PI_GATEWAY_DATA_DIR: "/nonexistent" },
		);
		expect(args).toEqual({
			url: "https://gw.example",
			token: undefined,
			extensions: ["permission-gate", "x"],
			model: { provider: "anthropic", id: "claude-x" },
			cwdMap: [["/a", "/b"]],
		});
		expect(() => parseAcpArgs([], {})).toThrow(/--url/);
	});
});
