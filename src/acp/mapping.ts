import type {
	SessionUpdate,
	StopReason,
	ToolCallContent,
	ToolCallLocation,
	ToolCallStatus,
	ToolKind,
} from "@agentclientprotocol/sdk";

/**
 * The bridge as a mapping: which gateway operation answers each ACP method, and pure functions
 * from the gateway's events (pi's JSON lines and the gateway's own) to ACP `session/update`s.
 * Nothing here does I/O; agent.ts calls the operations and sends what these return.
 */

/** ACP method → the gateway operation(s) it becomes (operationIds of openapi-3.0.yaml). README's Editors section lists the same. */
export const methodTable = {
	initialize: "none (answered by the bridge: protocol 1, loadSession, prompt capabilities)",
	"session/new":
		"sessionsCreate (POST /v1/sessions) + sessionsGetSlashCommands, sessionsGetModels, sessionsGetThinkingLevels",
	"session/load": "sessionsResume (POST /v1/sessions/{id}/resume) + sessionsGetMessages replayed as updates",
	"session/prompt":
		"sessionsPromptStream (POST …/prompt/stream), after a cut the same POST with Last-Event-ID (the rest of the run; pi sees the prompt once)",
	"session/cancel": "sessionsAbort (POST …/abort)",
	"session/set_config_option": "sessionsSetModel (PUT …/model) or sessionsSetThinkingLevel (PUT …/thinking-level)",
	"session/set_model": "sessionsSetModel (PUT …/model)",
	"session/request_permission (to the editor)": "approvalsAnswer (POST …/approvals/{approvalId}) with its choice",
	"elicitation/create (to the editor)": "approvalsAnswer with the text, for input/editor dialogs",
} as const;

/** What the bridge has told the editor about each tool call of a turn, so that a status never goes backwards. */
export interface ToolState {
	status: ToolCallStatus;
	title: string;
	kind: ToolKind;
	name: string;
	args: Record<string, unknown>;
}
export type TurnState = ReadonlyMap<string, ToolState>;
export const emptyTurn: TurnState = new Map();

const rank: Record<ToolCallStatus, number> = { pending: 0, in_progress: 1, completed: 2, failed: 2 };

/** pi's tool names → ACP tool kinds (Zed drops a permission request for a shell command that is not `execute`). */
export function toolKind(name: string): ToolKind {
	switch (name) {
		case "bash":
			return "execute";
		case "read":
			return "read";
		case "edit":
		case "write":
			return "edit";
		case "grep":
		case "find":
		case "ls":
			return "search";
		default:
			return "other";
	}
}

const record = (value: unknown): Record<string, unknown> =>
	value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);

/** A tool call's title: bash's command itself, else the tool and the path it works on. */
export function toolTitle(name: string, args: Record<string, unknown>): string {
	if (name === "bash" && str(args.command)) return str(args.command) as string;
	const path = str(args.path) ?? str(args.file_path) ?? str(args.pattern);
	return path ? `${name} ${path}` : name;
}

function locations(args: Record<string, unknown>): ToolCallLocation[] | undefined {
	const path = str(args.path) ?? str(args.file_path);
	return path ? [{ path }] : undefined;
}

/** The text parts of a pi tool result (`{content: [{type: "text", text}]}`), joined. */
export function resultText(result: unknown): string {
	const content = record(result).content;
	if (!Array.isArray(content)) return typeof result === "string" ? result : "";
	return content
		.map((part) => (record(part).type === "text" ? (str(record(part).text) ?? "") : ""))
		.filter(Boolean)
		.join("\n");
}

/** Edits as diffs (edit: each oldText → newText; write: the new content), so an editor can show them. */
function diffs(name: string, args: Record<string, unknown>): ToolCallContent[] {
	const path = str(args.path) ?? str(args.file_path);
	if (!path) return [];
	if (name === "write" && str(args.content) !== undefined)
		return [{ type: "diff", path, oldText: null, newText: str(args.content) as string }];
	if (name !== "edit") return [];
	const edits = Array.isArray(args.edits) ? args.edits.map(record) : [args];
	return edits
		.filter((edit) => str(edit.newText) !== undefined)
		.map((edit) => ({ type: "diff", path, oldText: str(edit.oldText) ?? null, newText: str(edit.newText) as string }));
}

const textContent = (text: string): ToolCallContent[] =>
	text ? [{ type: "content", content: { type: "text", text } }] : [];

/** Moves a tool call to `status` unless it is there or further already: statuses never go backwards. */
function advance(state: TurnState, id: string, status: ToolCallStatus): [TurnState, boolean] {
	const tool = state.get(id);
	if (!tool || rank[status] <= rank[tool.status] || rank[tool.status] === 2) return [state, false];
	return [new Map(state).set(id, { ...tool, status }), true];
}

/** A tool call the editor has not heard of yet: its `tool_call`, and the state that remembers it. */
export function announce(
	state: TurnState,
	id: string,
	name: string,
	args: Record<string, unknown>,
	status: ToolCallStatus = "pending",
): [TurnState, SessionUpdate[]] {
	if (state.has(id)) return [state, []];
	const tool: ToolState = { status, title: toolTitle(name, args), kind: toolKind(name), name, args };
	return [
		new Map(state).set(id, tool),
		[
			{
				sessionUpdate: "tool_call",
				toolCallId: id,
				title: tool.title,
				kind: tool.kind,
				status,
				rawInput: args,
				...(locations(args) ? { locations: locations(args) } : {}),
			},
		],
	];
}

/**
 * Events that become no update, on purpose: the run's frame (agent_start/end, turns, messages'
 * starts — the live prompt is never echoed back as user_message_chunk), gateway bookkeeping,
 * and approvals, which permissions.ts turns into requests.
 */
export const ignoredEvents = new Set([
	"stream_open",
	"response",
	"session_status",
	"agent_start",
	"agent_end",
	"agent_settled",
	"turn_start",
	"turn_end",
	"message_start",
	"queue_update",
	"compaction_start",
	"compaction_end",
	"auto_retry_start",
	"auto_retry_end",
	"run_changes",
	"folder_sync",
	"folder_restore",
	"approval_requested",
	"approval_resolved",
	"extension_ui_request",
	"extension_error",
	"bash_execution_update",
	"gap",
	"dropped",
	"line_dropped",
	"thinking_level_changed",
	"entry_appended",
]);

/**
 * One gateway event → the `session/update`s it means, and the turn's next state. Pure: the same
 * event and state give the same answer (unit-tested with literal events in test/fixtures/acp/).
 */
export function mapEvent(state: TurnState, event: Record<string, unknown>): [TurnState, SessionUpdate[]] {
	switch (event.type) {
		case "message_update": {
			const delta = record(event.assistantMessageEvent);
			if (delta.type === "text_delta" && str(delta.delta))
				return [
					state,
					[{ sessionUpdate: "agent_message_chunk", content: { type: "text", text: str(delta.delta) as string } }],
				];
			if (delta.type === "thinking_delta" && str(delta.delta))
				return [
					state,
					[{ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: str(delta.delta) as string } }],
				];
			if (delta.type === "toolcall_end") {
				const call = record(delta.toolCall);
				const id = str(call.id);
				if (id) return announce(state, id, str(call.name) ?? "tool", record(call.arguments));
			}
			return [state, []];
		}
		case "message_end": {
			// A provider error ends the message with no text delta: say it, or the turn ends silently.
			const message = record(event.message);
			if (message.role === "assistant" && message.stopReason === "error" && str(message.errorMessage))
				return [
					state,
					[
						{
							sessionUpdate: "agent_message_chunk",
							content: { type: "text", text: `Error: ${str(message.errorMessage)}` },
						},
					],
				];
			return [state, []];
		}
		case "tool_execution_start": {
			const id = str(event.toolCallId);
			if (!id) return [state, []];
			const [known, announced] = announce(state, id, str(event.toolName) ?? "tool", record(event.args), "in_progress");
			if (announced.length) return [known, announced];
			const [next, moved] = advance(state, id, "in_progress");
			return [next, moved ? [{ sessionUpdate: "tool_call_update", toolCallId: id, status: "in_progress" }] : []];
		}
		case "tool_execution_update": {
			const id = str(event.toolCallId);
			const tool = id ? state.get(id) : undefined;
			if (!id || !tool || rank[tool.status] === 2) return [state, []];
			const [next] = advance(state, id, "in_progress");
			// pi's partialResult is the output so far (bash streams it): the content is replaced, not appended.
			const text = resultText(event.partialResult);
			if (!text) return [next, []];
			return [
				next,
				[{ sessionUpdate: "tool_call_update", toolCallId: id, status: "in_progress", content: textContent(text) }],
			];
		}
		case "tool_execution_end": {
			const id = str(event.toolCallId);
			if (!id) return [state, []];
			let next = state;
			let updates: SessionUpdate[] = [];
			if (!state.has(id))
				[next, updates] = announce(state, id, str(event.toolName) ?? "tool", record(event.args), "in_progress");
			const tool = next.get(id) as ToolState;
			const status: ToolCallStatus = event.isError === true ? "failed" : "completed";
			const [done, moved] = advance(next, id, status);
			if (!moved) return [next, updates];
			const content = [
				...(status === "completed" ? diffs(tool.name, tool.args) : []),
				...textContent(resultText(event.result)),
			];
			return [
				done,
				[...updates, { sessionUpdate: "tool_call_update", toolCallId: id, status, content, rawOutput: event.result }],
			];
		}
		case "session_info_changed":
			return [state, str(event.name) ? [{ sessionUpdate: "session_info_update", title: str(event.name) }] : []];
		default:
			return [state, []];
	}
}

/** Tool calls still open when the run settled (an abort): failed, so none is left spinning. */
export function closeOpenTools(state: TurnState): SessionUpdate[] {
	return [...state]
		.filter(([, tool]) => rank[tool.status] < 2)
		.map(([id]) => ({ sessionUpdate: "tool_call_update", toolCallId: id, status: "failed" }) as SessionUpdate);
}

/** pi's stop reason of the run's last assistant message, or an abort, → ACP's. */
export function stopReason(aborted: boolean, piStopReason: string | undefined): StopReason {
	if (aborted || piStopReason === "aborted") return "cancelled";
	if (piStopReason === "length") return "max_tokens";
	if (piStopReason === "refusal" || piStopReason === "sensitive" || piStopReason === "content_filter") return "refusal";
	return "end_turn";
}
