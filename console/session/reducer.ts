/**
 * The transcript as one pure fold over a session's event stream. Every event carries its sequence
 * number; one at or below the last applied is a replay and changes nothing, so a reconnect (the
 * browser's Last-Event-ID, a fresh ticket with ?after=, or the whole log again) is not a special
 * case. Items are upserted by id: a message by the sequence number of its message_start, a tool
 * call by pi's toolCallId, an approval by its id.
 */

export type Block = { type: "text" | "thinking"; text: string };

export type Item =
	| { kind: "user"; id: string; text: string }
	/** `retries`: pi retried the call this many times before this error (auto-retry), shown as one error. */
	| { kind: "assistant"; id: string; blocks: Block[]; streaming: boolean; error?: string; retries?: number }
	| { kind: "tool"; id: string; name: string; args: unknown; output: string; status: "running" | "done" | "error" }
	| { kind: "notice"; id: string; text: string; level: "info" | "warning" | "error" }
	/** A dialog's answer where it was given: "Answered Allow by admin". */
	| { kind: "answer"; id: string; title: string; outcome: string; tone: "ok" | "bad" | "muted" }
	/** A call of a tool the calling program runs (clientTools): pending until that program answers. */
	| { kind: "client-tool"; id: string; name: string; args: unknown; status: string; output?: string; isError?: boolean }
	/** A run's structured output (outputSchema): the value, or why none validated. */
	| { kind: "output"; id: string; runId: string; output?: unknown; error?: string };

/** A settled run, named for people by when its prompt was sent and what it said. */
export interface RunRef {
	runId: string;
	files: readonly { path: string; status: string }[];
	prompt?: string;
	/** ms since the epoch: the prompt message's own timestamp. */
	at?: number;
}

export interface ApprovalRef {
	id: string;
	status: string;
	title: string;
}

export interface Transcript {
	/** The last sequence number applied. */
	lastSeq: number;
	items: readonly Item[];
	/** The assistant message being streamed (its item id). */
	current?: string;
	/** The user message between its message_start and message_end. */
	currentUser?: string;
	status?: string;
	/** Runs whose changes are known, newest last, with the paths they touched. */
	runs: readonly RunRef[];
	/**
	 * Runs started (agent_start) whose run_changes has not come yet, oldest first, each with its
	 * first prompt. run_changes comes after the run settled, possibly after the next run's prompt,
	 * so runs are matched in order, not by "the last prompt".
	 */
	started: readonly { text?: string; at?: number }[];
	approvals: Readonly<Record<string, ApprovalRef>>;
	/** Events the log no longer held when this stream joined it. */
	lost: number;
	ended: boolean;
	/** The last run ended with this error (after pi's retries); cleared by the next prompt. */
	failure?: { message: string; retries: number };
	/** pi is retrying: the attempt under way and the failed message it replaces. */
	retry?: { attempt: number; of: string };
	/** How pi last exited, as session_exit said. */
	exit?: { reason: string; code: number | null; signal: string | null; stderrTail: string };
}

export interface StreamEvent {
	seq: number;
	type: string;
	// biome-ignore lint/suspicious/noExplicitAny: pi's event JSON, read field by field below
	data: any;
}

export const emptyTranscript: Transcript = {
	lastSeq: 0,
	items: [],
	runs: [],
	started: [],
	approvals: {},
	lost: 0,
	ended: false,
};

export function reduce(t: Transcript, e: StreamEvent): Transcript {
	if (!Number.isFinite(e.seq) || e.seq <= t.lastSeq) return t;
	const next = apply({ ...t, lastSeq: e.seq }, e);
	return next;
}

/** Folds a list (a test's literal events, or a batch flushed once per frame). */
export const reduceAll = (t: Transcript, events: readonly StreamEvent[]) => events.reduce(reduce, t);

function apply(t: Transcript, { seq, type, data }: StreamEvent): Transcript {
	switch (type) {
		case "session_status":
			return { ...t, status: String(data.status) };
		case "session_exit": {
			const exit = {
				reason: String(data.reason ?? "exited"),
				code: typeof data.code === "number" ? data.code : null,
				signal: typeof data.signal === "string" ? data.signal : null,
				stderrTail: String(data.stderrTail ?? ""),
			};
			// The session's status as the API says it after such an exit.
			const asleep = ["idle", "lru", "shutdown", "lost"].includes(exit.reason) && data.resumable !== false;
			const status = exit.reason === "crashed" ? "crashed" : asleep ? "stopped" : "exited";
			return { ...t, status, ended: true, exit };
		}
		case "message_start":
			return messageStart(t, seq, data.message);
		case "message_update":
			return messageUpdate(t, data.assistantMessageEvent);
		case "message_end":
			return messageEnd(t, seq, data.message);
		case "tool_execution_start":
			return upsert(t, {
				kind: "tool",
				id: `t:${data.toolCallId}`,
				name: String(data.toolName ?? "tool"),
				args: data.args,
				output: "",
				status: "running",
			});
		case "tool_execution_update":
			return patchTool(t, data.toolCallId, { output: resultText(data.partialResult) });
		case "tool_execution_end":
			return patchTool(t, data.toolCallId, {
				output: resultText(data.result),
				status: data.isError ? "error" : "done",
			});
		case "approval_requested":
		case "approval_resolved": {
			const a = data.approval ?? {};
			if (typeof a.id !== "string") return t;
			const ref = { id: a.id, status: String(a.status), title: String(a.title ?? "") };
			const next = { ...t, approvals: { ...t.approvals, [a.id]: ref } };
			return type === "approval_resolved" ? upsert(next, answerItem(a)) : next;
		}
		case "extension_ui_request":
			// An extension's notification ("Allowed: rm -rf ./x") sits where it was said.
			if (data.method !== "notify" || typeof data.message !== "string") return t;
			return upsert(t, {
				kind: "notice",
				id: `n:${seq}`,
				text: data.message,
				level: data.notifyType === "error" ? "error" : data.notifyType === "warning" ? "warning" : "info",
			});
		case "run_changes": {
			if (t.runs.some((r) => r.runId === data.runId)) return t;
			const files = Array.isArray(data.files) ? data.files : [];
			const [oldest, ...rest] = t.started;
			const run: RunRef = { runId: String(data.runId), files, prompt: oldest?.text, at: oldest?.at };
			return { ...t, runs: [...t.runs, run], started: rest };
		}
		case "agent_start":
			return { ...t, started: [...t.started, {}], ended: false, exit: undefined };
		case "gap": {
			// What started before the gap may never be matched: name only what is seen whole.
			return { ...t, lost: t.lost + Number(data.lost ?? 0), started: [] };
		}
		case "tool_call_requested":
			return upsert(t, {
				kind: "client-tool",
				id: `c:${data.toolCallId ?? data.id}`,
				name: String(data.name ?? "tool"),
				args: data.arguments,
				status: "pending",
			});
		case "tool_call_resolved": {
			// The resolved resource, or its fields at the top level.
			const call = data.toolCall ?? data;
			const id = `c:${call.toolCallId ?? call.id}`;
			const item = t.items.find((i) => i.id === id);
			const result = call.result ?? call.output;
			const output =
				typeof result === "string"
					? result
					: result === undefined
						? undefined
						: resultText(result) || JSON.stringify(result);
			return upsert(t, {
				kind: "client-tool",
				id,
				name: String(call.name ?? (item?.kind === "client-tool" ? item.name : "tool")),
				args: call.arguments ?? (item?.kind === "client-tool" ? item.args : undefined),
				status: String(call.status ?? "answered"),
				output,
				isError: Boolean(call.isError ?? call.result?.isError),
			});
		}
		case "run_output":
			return upsert(t, {
				kind: "output",
				id: `o:${data.runId ?? seq}`,
				runId: String(data.runId ?? ""),
				output: data.output,
				error: data.error === undefined ? undefined : String(data.error?.message ?? data.error),
			});
		case "run_limit_reached": {
			const limit = data.limit ?? data;
			return upsert(t, {
				kind: "notice",
				id: `n:${seq}`,
				text: `Run stopped: its ${limit.kind ?? ""} limit was reached (${limit.used ?? "?"} of ${limit.allowed ?? "?"} allowed).`,
				level: "warning",
			});
		}
		case "run_lost":
			return upsert(t, {
				kind: "notice",
				id: `n:${seq}`,
				text: "The run in progress was lost with its gateway.",
				level: "error",
			});
		case "extension_error":
			return upsert(t, {
				kind: "notice",
				id: `n:${seq}`,
				text: String(data.error ?? "extension error"),
				level: "error",
			});
		case "auto_retry_start": {
			// One line that counts the attempts, in place of an error per attempt.
			const failed = [...t.items].reverse().find((i) => i.kind === "assistant" && i.error);
			const note = {
				kind: "notice" as const,
				id: "n:retry",
				text: `Retrying after an error (attempt ${data.attempt ?? "?"} of ${data.maxAttempts ?? "?"}): ${data.errorMessage ?? ""}`,
				level: "warning" as const,
			};
			return { ...upsert(t, note), retry: { attempt: Number(data.attempt ?? 1), of: failed?.id ?? "" } };
		}
		case "auto_retry_end": {
			const items = t.items.filter((i) => i.id !== "n:retry" && (!data.success || i.id !== t.retry?.of));
			return { ...t, items, retry: undefined };
		}
		default:
			return t;
	}
}

// biome-ignore lint/suspicious/noExplicitAny: pi's message JSON
type Message = any;

function messageStart(t: Transcript, seq: number, message: Message): Transcript {
	const id = `m:${seq}`;
	if (message?.role === "user") {
		const text = textOf(message.content);
		const at = typeof message.timestamp === "number" ? message.timestamp : undefined;
		// The run's first prompt names it (a steer or follow-up inside it does not).
		const last = t.started.at(-1);
		const started = last && last.text === undefined ? [...t.started.slice(0, -1), { text, at }] : t.started;
		return { ...upsert(t, { kind: "user", id, text }), currentUser: id, started, failure: undefined };
	}
	if (message?.role !== "assistant") return t;
	return { ...upsert(t, { kind: "assistant", id, blocks: blocksOf(message.content), streaming: true }), current: id };
}

function messageUpdate(t: Transcript, ev: Message): Transcript {
	const item = t.items.find((i) => i.id === t.current);
	if (!ev || item?.kind !== "assistant") return t;
	const index = Number(ev.contentIndex ?? 0);
	const blocks = [...item.blocks];
	const set = (type: Block["type"], text: string) => {
		blocks[index] = { type, text };
	};
	const prior = blocks[index]?.text ?? "";
	switch (ev.type) {
		case "text_start":
			set("text", "");
			break;
		case "text_delta":
			set("text", prior + String(ev.delta ?? ""));
			break;
		case "text_end":
			set("text", String(ev.content ?? prior));
			break;
		case "thinking_start":
			set("thinking", "");
			break;
		case "thinking_delta":
			set("thinking", prior + String(ev.delta ?? ""));
			break;
		case "thinking_end":
			set("thinking", String(ev.content ?? prior));
			break;
		default:
			return t;
	}
	return upsert(t, { ...item, blocks: dense(blocks) });
}

function messageEnd(t: Transcript, seq: number, message: Message): Transcript {
	if (message?.role === "user") {
		// Its message_start made the item; a stream that joined between the two makes it here.
		const id = t.currentUser ?? `m:${seq}`;
		return { ...upsert(t, { kind: "user", id, text: textOf(message.content) }), currentUser: undefined };
	}
	if (message?.role !== "assistant") return t;
	const id = t.current ?? `m:${seq}`;
	const error =
		message.stopReason === "error" || message.errorMessage ? String(message.errorMessage ?? "error") : undefined;
	// A retry's error takes the place of the one before it: one error, with the count of retries.
	const retries = error && t.retry ? t.retry.attempt : undefined;
	const base = retries ? { ...t, items: t.items.filter((i) => i.id !== t.retry?.of) } : t;
	const item: Item = { kind: "assistant", id, blocks: blocksOf(message.content), streaming: false, error, retries };
	const retry = t.retry && error ? { ...t.retry, of: id } : t.retry;
	const failure = error ? { message: error, retries: retries ?? 0 } : undefined;
	return { ...upsert(base, item), current: undefined, retry, failure };
}

// biome-ignore lint/suspicious/noExplicitAny: the approval resource as the event carries it
function answerItem(a: any): Item {
	const answer = a.answer as { value?: string; confirmed?: boolean; cancelled?: boolean } | null | undefined;
	const title = String(a.title ?? "").split("\n")[0] ?? "";
	const by = a.resolvedBy ? ` by ${a.resolvedBy}` : "";
	if (a.status === "answered" && answer && !answer.cancelled) {
		const what = answer.value ?? (answer.confirmed === undefined ? "answered" : answer.confirmed ? "Yes" : "No");
		const refused = /^(block|deny|no|reject|refuse|decline)\b/i.test(what);
		return { kind: "answer", id: `a:${a.id}`, title, outcome: `Answered ${what}${by}`, tone: refused ? "bad" : "ok" };
	}
	return {
		kind: "answer",
		id: `a:${a.id}`,
		title,
		outcome: `${a.status === "answered" ? "Dismissed" : String(a.status)}${by}`,
		tone: "muted",
	};
}

function patchTool(t: Transcript, toolCallId: unknown, patch: Partial<Extract<Item, { kind: "tool" }>>): Transcript {
	const id = `t:${toolCallId}`;
	const item = t.items.find((i) => i.id === id);
	if (item?.kind !== "tool") return t;
	return upsert(t, { ...item, ...patch });
}

function upsert(t: Transcript, item: Item): Transcript {
	const at = t.items.findIndex((i) => i.id === item.id);
	if (at < 0) return { ...t, items: [...t.items, item] };
	const items = [...t.items];
	items[at] = item;
	return { ...t, items };
}

const dense = (blocks: Block[]) => Array.from(blocks, (b) => b ?? { type: "text" as const, text: "" });

function blocksOf(content: Message): Block[] {
	if (typeof content === "string") return [{ type: "text", text: content }];
	if (!Array.isArray(content)) return [];
	return content.map((c: Message) =>
		c?.type === "thinking"
			? { type: "thinking" as const, text: String(c.thinking ?? "") }
			: { type: "text" as const, text: c?.type === "text" ? String(c.text ?? "") : "" },
	);
}

function textOf(content: Message): string {
	return blocksOf(content)
		.filter((b) => b.type === "text")
		.map((b) => b.text)
		.join("");
}

function resultText(result: Message): string {
	const content = result?.content;
	if (!Array.isArray(content)) return "";
	return content
		.filter((c: Message) => c?.type === "text")
		.map((c: Message) => String(c.text ?? ""))
		.join("");
}
