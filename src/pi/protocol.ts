import type { RpcExtensionUIRequest } from "@earendil-works/pi-coding-agent";
import { z } from "@hono/zod-openapi";
import { matching } from "./patterns.ts";

/**
 * pi's RPC commands (docs/rpc-commands.md of pi 1.6), as zod schemas of their fields without
 * `type` and `id`. Strict objects: a misspelt field is a 400 here, not a silent no-op in pi.
 */
export const ImageContent = z
	.strictObject({
		type: z.literal("image").openapi({ description: "Always `image`" }),
		data: z.string().min(1).openapi({ description: "Base64-encoded image bytes", example: "iVBORw0KGgo=" }),
		// The pattern written without a JavaScript regex's `\/` (RegExp#source adds it), which
		// openapi-zod-client and other generators copy into a regex of their own and choke on.
		mimeType: z
			.string()
			.regex(/^image\/[\w.+-]+$/)
			.openapi({ pattern: "^image/[\\w.+-]+$", description: "The image's media type", example: "image/png" }),
	})
	.openapi("ImageContent", { description: "An image sent with a prompt, as pi takes it" });

export const ThinkingLevel = z
	.enum(["off", "minimal", "low", "medium", "high", "xhigh", "max"])
	.openapi("ThinkingLevel", {
		description: "How much the model thinks before it answers (models without thinking ignore it)",
	});
export const QueueMode = z.enum(["all", "one-at-a-time"]).openapi("QueueMode", {
	description: "How pi delivers queued messages: `all` at once, or `one-at-a-time`",
});
export const StreamingBehavior = z.enum(["steer", "followUp"]).openapi({
	description:
		"While a run is going on: `steer` (delivered after the current turn's tool calls) or `followUp` (queued for when the agent finishes); without it a prompt to a busy session is 409",
});

/**
 * A session's display name, wherever one is set (create, PUT …/name, raw set_session_name): what
 * Node refuses in argv (NUL) or a terminal would misread (control characters) is refused.
 */
export const SessionName = matching(z.string().min(1).max(200), /^[^\p{Cc}]*$/u, "no control characters");

const message = z
	.string()
	.openapi({ description: "The user message's text", example: "List the files in this folder" });
const none = z.strictObject({});
/** Images one command may carry: pi decodes them all at once (20,000 hung it). */
export const maxImagesPerCommand = 64;
const userMessage = z.strictObject({
	message,
	images: z
		.array(ImageContent)
		.max(maxImagesPerCommand, `at most ${maxImagesPerCommand} images per command`)
		.optional()
		.openapi({ description: `Images sent with the message (at most ${maxImagesPerCommand})` }),
});
const enabled = z.boolean().openapi({ description: "On (`true`) or off (`false`)", example: true });
const queueMode = QueueMode.openapi({ description: "The new mode", example: "one-at-a-time" });

export const commandFields = {
	prompt: userMessage
		.extend({ streamingBehavior: StreamingBehavior.optional() })
		.openapi({ example: { message: "List the files in this folder" } }),
	steer: userMessage.openapi({ example: { message: "Skip the tests for now" } }),
	follow_up: userMessage.openapi({ example: { message: "Then summarise what you changed" } }),
	abort: none,
	clear_queue: none,
	new_session: z
		.strictObject({
			parentSession: z
				.string()
				.min(1)
				.optional()
				.openapi({ description: "pi session file the new session records as its parent" }),
		})
		.openapi({ example: {} }),
	get_state: none,
	get_messages: none,
	set_model: z
		.strictObject({
			provider: z.string().min(1).openapi({ description: "The model's provider", example: "pi-gateway-demo" }),
			modelId: z.string().min(1).openapi({ description: "The model's id at that provider", example: "demo" }),
		})
		.openapi({ example: { provider: "pi-gateway-demo", modelId: "demo" } }),
	cycle_model: none,
	get_available_models: none,
	set_thinking_level: z.strictObject({ level: ThinkingLevel }).openapi({ example: { level: "high" } }),
	cycle_thinking_level: none,
	get_available_thinking_levels: none,
	set_steering_mode: z.strictObject({ mode: queueMode }).openapi({ example: { mode: "one-at-a-time" } }),
	set_follow_up_mode: z.strictObject({ mode: queueMode }).openapi({ example: { mode: "all" } }),
	compact: z
		.strictObject({
			customInstructions: z
				.string()
				.optional()
				.openapi({ description: "What the summary should keep or stress, added to pi's compaction prompt" }),
		})
		.openapi({ example: { customInstructions: "Keep the list of files changed" } }),
	set_auto_compaction: z.strictObject({ enabled }).openapi({ example: { enabled: true } }),
	set_auto_retry: z.strictObject({ enabled }).openapi({ example: { enabled: false } }),
	abort_retry: none,
	bash: z
		.strictObject({
			command: z.string().min(1).openapi({ description: "The shell command pi runs", example: "ls -la" }),
			excludeFromContext: z.boolean().optional().openapi({
				description: "Keep the command and its output out of the conversation the model sees",
				example: false,
			}),
		})
		.openapi({ example: { command: "ls -la" } }),
	abort_bash: none,
	get_session_stats: none,
	export_html: z
		.strictObject({
			outputPath: z.string().min(1).optional().openapi({
				description: "Where pi writes the HTML file, inside the session's folder (pi picks a name by default)",
				example: "transcript.html",
			}),
		})
		.openapi({ example: { outputPath: "transcript.html" } }),
	switch_session: z
		.strictObject({
			sessionPath: z.string().min(1).openapi({
				description: "The pi session file to load, inside the session's folder",
				example: "sessions/2026-12-01T10-00-00.jsonl",
			}),
		})
		.openapi({ example: { sessionPath: "sessions/2026-12-01T10-00-00.jsonl" } }),
	fork: z
		.strictObject({
			entryId: z.string().min(1).openapi({
				description: "The user message's entry id to fork from (`GET …/fork-messages` lists them)",
				example: "a1b2c3d4",
			}),
		})
		.openapi({ example: { entryId: "a1b2c3d4" } }),
	clone: none,
	get_fork_messages: none,
	get_entries: z.strictObject({
		since: z
			.string()
			.min(1)
			.optional()
			.openapi({ description: "Only entries appended after this entry id", example: "a1b2c3d4" }),
	}),
	get_tree: none,
	get_last_assistant_text: none,
	set_session_name: z
		.strictObject({
			name: SessionName.openapi({ description: "The session's new display name", example: "Fix the login bug" }),
		})
		.openapi({ example: { name: "Fix the login bug" } }),
	get_commands: none,
} as const;

export type CommandType = keyof typeof commandFields;
export const commandTypes = Object.keys(commandFields) as CommandType[];

/** The fields schema of a known command; own keys only, so `constructor` is just an unknown type. */
export function fieldsOf(type: string): (typeof commandFields)[CommandType] | undefined {
	return Object.hasOwn(commandFields, type) ? commandFields[type as CommandType] : undefined;
}

/**
 * How a command meets the per-session queue. `queued`: changes the session, one at a time in
 * arrival order. `read`: answers from state, never waits. `control`: must get through while a
 * queued command (or a dialog it opened) is in flight, or it could never stop it.
 */
export type CommandKind = "queued" | "read" | "control";

const controlCommands: ReadonlySet<string> = new Set(["abort", "abort_bash", "abort_retry", "clear_queue"]);
const readCommands: ReadonlySet<string> = new Set([
	"get_state",
	"get_messages",
	"get_available_models",
	"get_available_thinking_levels",
	"get_session_stats",
	"get_fork_messages",
	"get_entries",
	"get_tree",
	"get_last_assistant_text",
	"get_commands",
	"export_html",
]);

export function commandKind(type: string): CommandKind {
	if (controlCommands.has(type)) return "control";
	if (readCommands.has(type)) return "read";
	return "queued";
}

/**
 * A command as it goes to pi's stdin. Loose on purpose: a raw command newer than the gateway
 * (`POST …/rpc`) only has to be an object with a type. The known ones are pi's own `RpcCommand`
 * field by field: protocol-check.ts holds commandFields equal to it.
 */
export type PiCommand = { type: string; id?: string } & Record<string, unknown>;

export interface PiResponse {
	type: "response";
	id?: string;
	command: string;
	success: boolean;
	data?: unknown;
	error?: string;
}

/** Raw commands (`POST …/rpc`): known types are checked field by field; newer ones pass as objects. */
export const RawCommand = z
	.looseObject({
		type: z
			.string()
			.regex(/^[a-z][a-z0-9_]*$/)
			.openapi({ description: "pi's command type; the command's other fields sit beside it", example: "get_state" }),
	})
	.superRefine((value, ctx) => {
		if ("id" in value) ctx.addIssue({ code: "custom", path: ["id"], message: "the gateway assigns command ids" });
		if (value.type === "extension_ui_response") {
			ctx.addIssue({ code: "custom", path: ["type"], message: "answer dialogs through the approvals resource" });
		}
		const schema = fieldsOf(value.type);
		if (!schema) return;
		const { type: _type, ...fields } = value;
		const result = schema.safeParse(fields);
		for (const issue of result.error?.issues ?? []) ctx.addIssue({ ...issue, code: "custom", message: issue.message });
	})
	.openapi("RawCommand", {
		description: "One pi RPC command as pi reads it, without `id` (the gateway assigns it)",
		example: { type: "get_state" },
	});

export const dialogMethods = ["select", "confirm", "input", "editor"] as const;
export type DialogMethod = (typeof dialogMethods)[number];

/**
 * `extension_ui_request` from pi: its own discriminated union (protocol-check.ts holds it equal), so a
 * method pi adds or reshapes is a compile error where the gateway reads it. pi passes extension
 * values through unchecked, so readers still default what may be missing at run time.
 */
export type UiRequest = RpcExtensionUIRequest;
/** The dialogs: requests that wait for an answer (select, confirm, input, editor). */
export type DialogRequest = Extract<UiRequest, { method: DialogMethod }>;

export function isDialogRequest(request: UiRequest): request is DialogRequest {
	return (dialogMethods as readonly string[]).includes(request.method);
}
