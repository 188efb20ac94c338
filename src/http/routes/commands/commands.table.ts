// Over 300 lines on purpose: the table of every pi command the API exposes (route, body schema,
// answer, scope) reads as one list, so a command missing from it or declared twice shows at a glance.
import { z } from "@hono/zod-openapi";
import { type CommandType, commandFields } from "../../../pi/protocol.ts";
import {
	AgentMessage,
	BashResult,
	Cancelled,
	CompactResult,
	PiModel,
	PiState,
	SessionEntry,
	SessionStats,
	SlashCommand,
	TreeNode,
} from "../../transport/schemas.ts";

/**
 * Every pi RPC command but prompt/steer/follow_up (runs.routes.ts: streaming and wait modes) as one HTTP
 * operation. `data: null` means pi answers with no data: the operation answers 204.
 * `fields` says where the command's fields come from: the JSON body or the query string.
 */
export interface CommandSpec {
	type: CommandType;
	operationId: string;
	method: "get" | "post" | "put";
	path: string;
	summary: string;
	data: z.ZodType | null;
	fields?: "body" | "query";
	/** With Accept: text/event-stream, streams the events of this type that carry the command's id. */
	streams?: string;
	/** Brings pi's `data` to what `data` declares where pi leaves a field out instead of saying null. */
	answer?: (data: unknown) => unknown;
}

const messages = z
	.object({ messages: z.array(AgentMessage).describe("The conversation's messages, oldest first") })
	.openapi("Messages", {
		description: "The conversation (`get_messages`)",
		example: { messages: [{ role: "user", content: "List the files in this folder", timestamp: 1764669600000 }] },
	});

// `satisfies`, not a type annotation: each entry keeps its literal `type`, which src/http/routes/commands/protocol-check.ts
// holds against pi's commands (a pi command without an operation here breaks tsc).
export const commandSpecs = [
	{
		type: "abort",
		operationId: "sessions.abort",
		method: "post",
		path: "/abort",
		summary: "Abort the current run and wait until pi is idle (pending dialogs are cancelled)",
		data: null,
	},
	{
		type: "clear_queue",
		operationId: "sessions.clearQueue",
		method: "post",
		path: "/queue/clear",
		summary: "Remove queued steering and follow-up messages and return their text",
		data: z
			.object({
				steering: z.array(z.string()).describe("The steering messages removed"),
				followUp: z.array(z.string()).describe("The follow-up messages removed"),
			})
			.openapi("ClearedQueue", {
				description: "The queued messages that were removed",
				example: { steering: [], followUp: ["Then summarise what you changed"] },
			}),
	},
	{
		type: "new_session",
		operationId: "sessions.newSession",
		method: "post",
		path: "/new",
		summary: "Start a fresh pi session in this process",
		data: Cancelled,
		fields: "body",
	},
	{
		type: "get_state",
		operationId: "sessions.getState",
		method: "get",
		path: "/state",
		summary: "pi's current state (model, streaming, queue modes, session file)",
		data: PiState,
	},
	{
		type: "get_messages",
		operationId: "sessions.getMessages",
		method: "get",
		path: "/messages",
		summary: "All messages of the conversation",
		data: messages,
	},
	{
		type: "get_entries",
		operationId: "sessions.getEntries",
		method: "get",
		path: "/entries",
		summary: "Session entries in append order, optionally after an entry id",
		data: z
			.object({
				entries: z.array(SessionEntry).describe("Entries in append order"),
				leafId: z.string().nullable().describe("The current leaf entry; null in an empty session"),
			})
			.openapi("Entries", {
				description: "Entries of pi's session file (`get_entries`)",
				example: { entries: [{ type: "message", id: "a1b2c3d4", parentId: null }], leafId: "a1b2c3d4" },
			}),
		fields: "query",
	},
	{
		type: "get_tree",
		operationId: "sessions.getTree",
		method: "get",
		path: "/tree",
		summary: "The session as a tree of entries",
		data: z
			.object({
				tree: z.array(TreeNode).describe("The root entries, each with the entries that follow it"),
				leafId: z.string().nullable().describe("The current leaf entry; null in an empty session"),
			})
			.openapi("Tree", {
				description: "The session as a tree of entries (`get_tree`)",
				example: {
					tree: [{ entry: { type: "message", id: "a1b2c3d4", parentId: null }, children: [] }],
					leafId: "a1b2c3d4",
				},
			}),
	},
	{
		type: "set_model",
		operationId: "sessions.setModel",
		method: "put",
		path: "/model",
		summary: "Switch to a model",
		data: PiModel,
		fields: "body",
	},
	{
		type: "cycle_model",
		operationId: "sessions.cycleModel",
		method: "post",
		path: "/model/cycle",
		summary: "Cycle to the next available model (null when there is only one)",
		data: z
			.object({
				model: PiModel,
				thinkingLevel: z.string().describe("The thinking level now in use"),
				isScoped: z.boolean().describe("The cycle ran over the models scoped with `--models`, not all of them"),
			})
			.nullable()
			.openapi("CycledModel", {
				description: "The model now in use; null when there is only one",
				example: { model: { id: "demo", provider: "pi-gateway-demo" }, thinkingLevel: "off", isScoped: false },
			}),
	},
	{
		type: "get_available_models",
		operationId: "sessions.getModels",
		method: "get",
		path: "/models",
		summary: "Every configured model",
		data: z.object({ models: z.array(PiModel).describe("Every model pi has configured") }).openapi("Models", {
			description: "The models a session can switch to",
			example: { models: [{ id: "demo", name: "Demo", provider: "pi-gateway-demo" }] },
		}),
	},
	{
		type: "set_thinking_level",
		operationId: "sessions.setThinkingLevel",
		method: "put",
		path: "/thinking-level",
		summary: "Set the thinking level",
		data: null,
		fields: "body",
	},
	{
		type: "cycle_thinking_level",
		operationId: "sessions.cycleThinkingLevel",
		method: "post",
		path: "/thinking-level/cycle",
		summary: "Cycle the thinking level (null when the model does not think)",
		data: z
			.object({ level: z.string().describe("The thinking level now in use") })
			.nullable()
			.openapi("CycledThinkingLevel", {
				description: "The thinking level now in use; null when the model does not think",
				example: { level: "high" },
			}),
	},
	{
		type: "get_available_thinking_levels",
		operationId: "sessions.getThinkingLevels",
		method: "get",
		path: "/thinking-levels",
		summary: "Thinking levels the current model supports",
		data: z
			.object({ levels: z.array(z.string()).describe("The levels the model takes, lowest first") })
			.openapi("ThinkingLevels", {
				description: "The thinking levels of the current model",
				example: { levels: ["off", "minimal", "low", "medium", "high"] },
			}),
	},
	{
		type: "set_steering_mode",
		operationId: "sessions.setSteeringMode",
		method: "put",
		path: "/steering-mode",
		summary: "How steering messages are delivered",
		data: null,
		fields: "body",
	},
	{
		type: "set_follow_up_mode",
		operationId: "sessions.setFollowUpMode",
		method: "put",
		path: "/follow-up-mode",
		summary: "How follow-up messages are delivered",
		data: null,
		fields: "body",
	},
	{
		type: "compact",
		operationId: "sessions.compact",
		method: "post",
		path: "/compact",
		summary: "Compact the conversation context",
		data: CompactResult,
		fields: "body",
	},
	{
		type: "set_auto_compaction",
		operationId: "sessions.setAutoCompaction",
		method: "put",
		path: "/auto-compaction",
		summary: "Turn automatic compaction on or off",
		data: null,
		fields: "body",
	},
	{
		type: "set_auto_retry",
		operationId: "sessions.setAutoRetry",
		method: "put",
		path: "/auto-retry",
		summary: "Turn automatic retry on transient errors on or off",
		data: null,
		fields: "body",
	},
	{
		type: "abort_retry",
		operationId: "sessions.abortRetry",
		method: "post",
		path: "/retry/abort",
		summary: "Cancel an in-progress retry",
		data: null,
	},
	{
		type: "bash",
		operationId: "sessions.bash",
		method: "post",
		path: "/bash",
		summary: "Run a shell command and add its output to the context of the next prompt",
		data: BashResult,
		fields: "body",
		streams: "bash_execution_update",
	},
	{
		type: "abort_bash",
		operationId: "sessions.abortBash",
		method: "post",
		path: "/bash/abort",
		summary: "Abort a running bash command",
		data: null,
	},
	{
		type: "get_session_stats",
		operationId: "sessions.getStats",
		method: "get",
		path: "/stats",
		summary: "Token usage, cost and context-window usage",
		data: SessionStats,
	},
	{
		type: "export_html",
		operationId: "sessions.exportHtml",
		method: "post",
		path: "/export-html",
		summary: "Export the session to an HTML file (inside the workspace root)",
		data: z
			.object({ path: z.string().describe("Where pi wrote the HTML file") })
			.openapi("ExportedFile", { description: "The exported transcript", example: { path: "transcript.html" } }),
		fields: "body",
	},
	{
		type: "switch_session",
		operationId: "sessions.switchSession",
		method: "post",
		path: "/switch",
		summary: "Load another pi session file",
		data: Cancelled,
		fields: "body",
	},
	{
		type: "fork",
		operationId: "sessions.fork",
		method: "post",
		path: "/fork",
		summary: "Fork from an earlier user message",
		data: z
			.looseObject({
				text: z.string().optional().describe("The text of the message forked from, to edit and send again"),
				cancelled: z.boolean().describe("An extension cancelled the fork"),
			})
			.openapi("ForkResult", {
				description: "What a fork did",
				example: { text: "List the files in this folder", cancelled: false },
			}),
		fields: "body",
	},
	{
		type: "clone",
		operationId: "sessions.clone",
		method: "post",
		path: "/clone",
		summary: "Duplicate the active branch into a new pi session",
		data: Cancelled,
	},
	{
		type: "get_fork_messages",
		operationId: "sessions.getForkMessages",
		method: "get",
		path: "/fork-messages",
		summary: "User messages available for forking",
		data: z
			.object({
				messages: z
					.array(
						z.object({
							entryId: z.string().describe("The entry to pass to `POST …/fork`"),
							text: z.string().describe("The user message's text"),
						}),
					)
					.describe("User messages a fork can start from"),
			})
			.openapi("ForkMessages", {
				description: "Where the session can be forked",
				example: { messages: [{ entryId: "a1b2c3d4", text: "List the files in this folder" }] },
			}),
	},
	{
		type: "get_last_assistant_text",
		operationId: "sessions.getLastAssistantText",
		method: "get",
		path: "/last-assistant-text",
		summary: "Text of the last assistant message",
		data: z
			.object({ text: z.string().nullable().describe("The text; null before the first answer") })
			.openapi("LastAssistantText", {
				description: "The text of the last assistant message that had text",
				example: { text: "The folder holds README.md and src/." },
			}),
		// pi answers `{ text: undefined }` when no answer has text yet (a run that only called tools so far),
		// which its JSON writes as `{}`: the API promises the field, null.
		answer: (data) => ({ text: (data as { text?: string } | undefined)?.text ?? null }),
	},
	{
		type: "set_session_name",
		operationId: "sessions.setName",
		method: "put",
		path: "/name",
		summary: "Set the session's display name",
		data: null,
		fields: "body",
	},
	{
		type: "get_commands",
		operationId: "sessions.getSlashCommands",
		method: "get",
		path: "/slash-commands",
		summary: "Extension commands, prompt templates and skills (run them with prompt '/name')",
		data: z
			.object({ commands: z.array(SlashCommand).describe("Every command a prompt can start with") })
			.openapi("SlashCommands", {
				description: "Extension commands, prompt templates and skills",
				example: { commands: [{ name: "review", description: "Review the last change", source: "prompt" }] },
			}),
	},
] satisfies CommandSpec[];

export function fieldsSchema(spec: CommandSpec) {
	return commandFields[spec.type];
}
