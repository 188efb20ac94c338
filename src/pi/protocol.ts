import type { RpcExtensionUIRequest } from "@earendil-works/pi-coding-agent";
import { z } from "@hono/zod-openapi";
import { matching } from "../patterns.ts";

/**
 * pi's RPC commands (docs/rpc-commands.md of pi 1.6), as zod schemas of their fields without
 * `type` and `id`. Strict objects: a misspelt field is a 400 here, not a silent no-op in pi.
 */
export const ImageContent = z
	.strictObject({
		type: z.literal("image"),
		data: z.string().min(1).openapi({ description: "Base64-encoded image bytes" }),
		mimeType: z.string().regex(/^image\/[\w.+-]+$/),
	})
	.openapi("ImageContent");

export const ThinkingLevel = z
	.enum(["off", "minimal", "low", "medium", "high", "xhigh", "max"])
	.openapi("ThinkingLevel");
export const QueueMode = z.enum(["all", "one-at-a-time"]).openapi("QueueMode");
export const StreamingBehavior = z.enum(["steer", "followUp"]);

/**
 * A session's display name, wherever one is set (create, PUT …/name, raw set_session_name): what
 * Node refuses in argv (NUL) or a terminal would misread (control characters) is refused.
 */
export const SessionName = matching(z.string().min(1).max(200), /^[^\p{Cc}]*$/u, "no control characters");

const message = z.string().openapi({ example: "List the files in this folder" });
const none = z.strictObject({});
/** Images one command may carry: pi decodes them all at once (20,000 hung it). */
export const maxImagesPerCommand = 64;
const userMessage = z.strictObject({
	message,
	images: z
		.array(ImageContent)
		.max(maxImagesPerCommand, `at most ${maxImagesPerCommand} images per command`)
		.optional(),
});

export const commandFields = {
	prompt: userMessage.extend({ streamingBehavior: StreamingBehavior.optional() }),
	steer: userMessage,
	follow_up: userMessage,
	abort: none,
	clear_queue: none,
	new_session: z.strictObject({ parentSession: z.string().min(1).optional() }),
	get_state: none,
	get_messages: none,
	set_model: z.strictObject({
		provider: z.string().min(1).openapi({ example: "pi-gateway-demo" }),
		modelId: z.string().min(1).openapi({ example: "demo" }),
	}),
	cycle_model: none,
	get_available_models: none,
	set_thinking_level: z.strictObject({ level: ThinkingLevel }),
	cycle_thinking_level: none,
	get_available_thinking_levels: none,
	set_steering_mode: z.strictObject({ mode: QueueMode }),
	set_follow_up_mode: z.strictObject({ mode: QueueMode }),
	compact: z.strictObject({ customInstructions: z.string().optional() }),
	set_auto_compaction: z.strictObject({ enabled: z.boolean() }),
	set_auto_retry: z.strictObject({ enabled: z.boolean() }),
	abort_retry: none,
	bash: z.strictObject({
		command: z.string().min(1).openapi({ example: "ls -la" }),
		excludeFromContext: z.boolean().optional(),
	}),
	abort_bash: none,
	get_session_stats: none,
	export_html: z.strictObject({ outputPath: z.string().min(1).optional() }),
	switch_session: z.strictObject({ sessionPath: z.string().min(1) }),
	fork: z.strictObject({ entryId: z.string().min(1) }),
	clone: none,
	get_fork_messages: none,
	get_entries: z.strictObject({ since: z.string().min(1).optional() }),
	get_tree: none,
	get_last_assistant_text: none,
	set_session_name: z.strictObject({ name: SessionName }),
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
			.openapi({ example: "get_state" }),
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
	.openapi("RawCommand");

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
