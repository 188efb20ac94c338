import { describe, expect, it } from "vitest";
import { emptyTranscript, reduceAll, type StreamEvent } from "../../console/session/reducer.ts";

// The console's transcript is one pure fold over a session's events (console/session/reducer.ts):
// literal events as the gateway sends them (demo model, permission gate), replayed whole or in
// part as a reconnect does, must give the same transcript.
const sid = "ses_test";
let seq = 0;
const ev = (type: string, data: Record<string, unknown> = {}): StreamEvent => ({
	seq: ++seq,
	type,
	data: { type, ...data },
});
const user = (text: string) => ({ role: "user", content: [{ type: "text", text }] });
const assistant = (text: string) => ({ role: "assistant", content: [{ type: "text", text }], stopReason: "stop" });
const delta = (d: string) =>
	ev("message_update", { assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: d } });

const approval = {
	id: "ap1",
	sessionId: sid,
	method: "select",
	title: "Allow this bash command?\n\n  rm -rf ./x",
	options: ["Allow", "Block"],
	status: "pending",
};
const run: StreamEvent[] = [
	ev("session_status", { sessionId: sid, status: "running" }),
	ev("agent_start"),
	ev("message_start", { message: user("bash: rm -rf ./x") }),
	ev("message_end", { message: user("bash: rm -rf ./x") }),
	ev("message_start", { message: { role: "assistant", content: [] } }),
	ev("message_update", { assistantMessageEvent: { type: "thinking_start", contentIndex: 0 } }),
	ev("message_update", { assistantMessageEvent: { type: "thinking_delta", contentIndex: 0, delta: "hmm" } }),
	ev("message_end", {
		message: {
			role: "assistant",
			content: [
				{ type: "thinking", thinking: "hmm" },
				{ type: "toolCall", id: "c1" },
			],
		},
	}),
	ev("tool_execution_start", { toolCallId: "c1", toolName: "bash", args: { command: "rm -rf ./x" } }),
	ev("approval_requested", { sessionId: sid, approval }),
	ev("session_status", { sessionId: sid, status: "waiting" }),
	ev("approval_resolved", {
		sessionId: sid,
		approval: { ...approval, status: "answered", answer: { value: "Allow" } },
	}),
	ev("tool_execution_update", { toolCallId: "c1", partialResult: { content: [{ type: "text", text: "remov" }] } }),
	ev("tool_execution_update", { toolCallId: "c1", partialResult: { content: [{ type: "text", text: "removed x" }] } }),
	ev("tool_execution_end", {
		toolCallId: "c1",
		result: { content: [{ type: "text", text: "removed x\n" }] },
		isError: false,
	}),
	ev("message_start", { message: { role: "assistant", content: [] } }),
	ev("message_update", { assistantMessageEvent: { type: "text_start", contentIndex: 0 } }),
	delta("The command "),
	delta("finished."),
	ev("message_end", { message: assistant("The command finished.") }),
	ev("agent_settled", { aborted: false }),
	ev("session_status", { sessionId: sid, status: "idle" }),
	ev("run_changes", { sessionId: sid, runId: "gw_2", files: [{ path: "x", status: "deleted" }], truncated: false }),
];
const whole = reduceAll(emptyTranscript, run);

describe("the console's transcript reducer", () => {
	it("folds a run into entries: the prompt, thinking, the tool call with its output, the answer", () => {
		expect(whole.items).toEqual([
			{ kind: "user", id: "m:3", text: "bash: rm -rf ./x" },
			{
				kind: "assistant",
				id: "m:5",
				blocks: [
					{ type: "thinking", text: "hmm" },
					{ type: "text", text: "" },
				],
				streaming: false,
				error: undefined,
			},
			{
				kind: "tool",
				id: "t:c1",
				name: "bash",
				args: { command: "rm -rf ./x" },
				output: "removed x\n",
				status: "done",
			},
			// The answer where it was given: after the command it asks about, before what followed.
			{ kind: "answer", id: "a:ap1", title: "Allow this bash command?", outcome: "Answered Allow", tone: "ok" },
			{
				kind: "assistant",
				id: "m:16",
				blocks: [{ type: "text", text: "The command finished." }],
				streaming: false,
				error: undefined,
			},
		]);
		expect(whole.status).toBe("idle");
		expect(whole.approvals).toEqual({ ap1: { id: "ap1", status: "answered", title: approval.title } });
		// The run is named by its prompt (and the prompt's time, when pi stamped it), not by its id.
		expect(whole.runs).toEqual([
			{ runId: "gw_2", files: [{ path: "x", status: "deleted" }], prompt: "bash: rm -rf ./x" },
		]);
		expect(whole.lastSeq).toBe(run.length);
	});

	it("streams: deltas grow the open message, bash output grows its tool entry", () => {
		const upTo = (n: number) => reduceAll(emptyTranscript, run.slice(0, n));
		const at18 = upTo(18).items.at(-1);
		expect(at18).toMatchObject({
			kind: "assistant",
			streaming: true,
			blocks: [{ type: "text", text: "The command " }],
		});
		expect(upTo(13).items.find((i) => i.id === "t:c1")).toMatchObject({ output: "remov", status: "running" });
	});

	it("a replay changes nothing: the whole log again, or a reconnect that resends what it saw", () => {
		expect(reduceAll(whole, run)).toBe(whole);
		for (const cut of [1, 7, 12, 18, 22]) {
			// A reconnect: the stream starts again a few events before where it broke (as after=0 would).
			const resumed = reduceAll(reduceAll(emptyTranscript, run.slice(0, cut)), run.slice(Math.max(0, cut - 5)));
			expect(resumed, `cut at ${cut}`).toEqual(whole);
		}
	});

	it("events out of order below the last applied are ignored; events without an id are too", () => {
		const late = reduceAll(whole, [{ seq: 2, type: "message_start", data: { message: user("again") } }]);
		expect(late).toBe(whole);
		expect(reduceAll(whole, [{ seq: Number.NaN, type: "dropped", data: {} }])).toBe(whole);
	});

	it("a stream that joins mid-message still gets the message from its message_end; a gap is counted", () => {
		const joined = reduceAll(emptyTranscript, [
			{ seq: 40, type: "gap", data: { type: "gap", lost: 39, after: 0, firstAvailable: 41 } },
			{ seq: 41, type: "message_update", data: { assistantMessageEvent: { type: "text_delta", delta: "lost" } } },
			{ seq: 42, type: "message_end", data: { message: assistant("whole text") } },
		]);
		expect(joined.lost).toBe(39);
		expect(joined.items).toEqual([
			{
				kind: "assistant",
				id: "m:42",
				blocks: [{ type: "text", text: "whole text" }],
				streaming: false,
				error: undefined,
			},
		]);
	});

	it("ends on session_exit", () => {
		const ended = reduceAll(whole, [{ seq: 99, type: "session_exit", data: { code: 0, signal: null } }]);
		expect(ended).toMatchObject({ ended: true, status: "exited" });
	});

	it("names each run by its first prompt and that prompt's timestamp, matched in order even when run_changes comes late", () => {
		let n = 100;
		const at = (type: string, data: Record<string, unknown> = {}): StreamEvent => ({
			seq: ++n,
			type,
			data: { type, ...data },
		});
		const stamped = (text: string, timestamp: number) => ({ ...user(text), timestamp });
		const two = reduceAll(emptyTranscript, [
			at("agent_start"),
			at("message_start", { message: stamped("first prompt", 1_700_000_000_000) }),
			at("message_start", { message: stamped("a steer in the same run", 1_700_000_001_000) }),
			at("agent_settled"),
			// The next prompt is sent at once, before the first run's snapshot is taken.
			at("agent_start"),
			at("message_start", { message: stamped("second prompt", 1_700_000_060_000) }),
			at("run_changes", { runId: "gw_1", files: [], truncated: false }),
			at("agent_settled"),
			at("run_changes", { runId: "gw_2", files: null, truncated: false, error: "no snapshot" }),
		]);
		expect(two.runs).toEqual([
			{ runId: "gw_1", files: [], prompt: "first prompt", at: 1_700_000_000_000 },
			{ runId: "gw_2", files: [], prompt: "second prompt", at: 1_700_000_060_000 },
		]);
		expect(two.started).toEqual([]);
		// A stream that joined mid-run (after a gap) leaves that run unnamed rather than misnamed.
		const joined = reduceAll(emptyTranscript, [
			{ seq: 5, type: "gap", data: { lost: 4 } },
			{ seq: 6, type: "run_changes", data: { runId: "gw_9", files: [], truncated: false } },
		]);
		expect(joined.runs).toEqual([{ runId: "gw_9", files: [] }]);
	});

	it("shows a program's client tool call from requested to resolved, a run's structured output and a limit reached", () => {
		let n = 200;
		const at = (type: string, data: Record<string, unknown> = {}): StreamEvent => ({
			seq: ++n,
			type,
			data: { type, ...data },
		});
		const events = [
			at("tool_call_requested", { toolCallId: "tc1", name: "lookup_order", arguments: { id: 7 }, runId: "gw_3" }),
			at("tool_call_resolved", {
				toolCall: { id: "tc1", name: "lookup_order", arguments: { id: 7 }, status: "answered", result: "shipped" },
			}),
			at("run_output", { runId: "gw_3", output: { status: "shipped" } }),
			at("run_output", { runId: "gw_4", error: { message: "did not validate", attempts: 3 } }),
			at("run_limit_reached", { runId: "gw_5", limit: { kind: "turns", allowed: 2, used: 2 } }),
		];
		const pending = reduceAll(emptyTranscript, events.slice(0, 1));
		expect(pending.items).toEqual([
			{ kind: "client-tool", id: "c:tc1", name: "lookup_order", args: { id: 7 }, status: "pending" },
		]);
		const t = reduceAll(emptyTranscript, events);
		expect(t.items).toEqual([
			{
				kind: "client-tool",
				id: "c:tc1",
				name: "lookup_order",
				args: { id: 7 },
				status: "answered",
				output: "shipped",
				isError: false,
			},
			{ kind: "output", id: "o:gw_3", runId: "gw_3", output: { status: "shipped" }, error: undefined },
			{ kind: "output", id: "o:gw_4", runId: "gw_4", output: undefined, error: "did not validate" },
			{
				kind: "notice",
				id: "n:205",
				text: "Run stopped: its turns limit was reached (2 of 2 allowed).",
				level: "warning",
			},
		]);
		// Replayed whole: the same transcript.
		expect(reduceAll(t, events)).toBe(t);
	});

	it("shows pi's retries of one error as one error that counts them, and an extension's notification in its place", () => {
		seq = 100;
		const failed = (n: number) => ({
			role: "assistant",
			content: [],
			stopReason: "error",
			errorMessage: "529 overloaded",
			n,
		});
		const events: StreamEvent[] = [
			ev("agent_start"),
			ev("message_start", { message: user("go") }),
			ev("message_end", { message: user("go") }),
			ev("extension_ui_request", { id: "u1", method: "notify", message: "Allowed: ls", notifyType: "info" }),
			ev("message_start", { message: { role: "assistant", content: [] } }),
			ev("message_end", { message: failed(0) }),
		];
		for (const attempt of [1, 2, 3]) {
			events.push(ev("auto_retry_start", { attempt, maxAttempts: 3, delayMs: 1, errorMessage: "529 overloaded" }));
			events.push(ev("message_start", { message: { role: "assistant", content: [] } }));
			events.push(ev("message_end", { message: failed(attempt) }));
		}
		const during = reduceAll(emptyTranscript, events);
		expect(during.items.filter((i) => i.kind === "notice").map((i) => (i as { text: string }).text)).toEqual([
			"Allowed: ls",
			"Retrying after an error (attempt 3 of 3): 529 overloaded",
		]);
		events.push(ev("auto_retry_end", { success: false, attempt: 3, finalError: "529 overloaded" }));
		const t = reduceAll(emptyTranscript, events);
		const errors = t.items.filter((i) => i.kind === "assistant" && i.error);
		expect(errors).toEqual([expect.objectContaining({ error: "529 overloaded", retries: 3 })]);
		expect(t.items.map((i) => i.kind)).toEqual(["user", "notice", "assistant"]);
		expect(t.failure).toEqual({ message: "529 overloaded", retries: 3 });
		// A new prompt: the failure is history.
		const next = reduceAll(t, [ev("message_start", { message: user("again") })]);
		expect(next.failure).toBeUndefined();
	});

	it("a retry that succeeds leaves no error behind; an exit says why pi stopped", () => {
		seq = 200;
		const t = reduceAll(emptyTranscript, [
			ev("message_start", { message: user("go") }),
			ev("message_start", { message: { role: "assistant", content: [] } }),
			ev("message_end", { message: { role: "assistant", content: [], stopReason: "error", errorMessage: "503" } }),
			ev("auto_retry_start", { attempt: 1, maxAttempts: 3, errorMessage: "503" }),
			ev("message_start", { message: { role: "assistant", content: [] } }),
			ev("message_end", { message: assistant("fine") }),
			ev("auto_retry_end", { success: true, attempt: 1 }),
			ev("session_exit", { code: null, signal: "SIGKILL", reason: "crashed", stderrTail: "boom" }),
		]);
		expect(t.items.map((i) => i.kind)).toEqual(["user", "assistant"]);
		expect(t.failure).toBeUndefined();
		expect(t.status).toBe("crashed");
		expect(t.exit).toEqual({ reason: "crashed", code: null, signal: "SIGKILL", stderrTail: "boom" });
	});
});
