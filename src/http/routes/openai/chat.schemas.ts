import { z } from "@hono/zod-openapi";

// OpenAI's Chat Completions shapes, the subset the gateway honours (docs/openai.md). Objects are
// not strict: a field the gateway does not know (OpenAI adds them often) is ignored, as documented.

const TextPart = z
	.object({ type: z.literal("text").describe("Always `text`"), text: z.string().describe("The text") })
	.describe("A part of a message: text");
const ImagePart = z
	.object({
		type: z.literal("image_url").describe("Always `image_url`"),
		image_url: z
			.object({
				url: z.string().describe("A `data:image/…;base64,…` URL (the gateway fetches nothing)"),
				detail: z.string().optional().describe("Ignored"),
			})
			.describe("The image"),
	})
	.describe("A part of a user message: an image, sent to pi with the prompt");
const RefusalPart = z
	.object({ type: z.literal("refusal").describe("Always `refusal`"), refusal: z.string().describe("The refusal") })
	.describe("A part of an assistant message: a refusal, kept as text");
const textContent = (what: string) => z.union([z.string(), z.array(TextPart)]).describe(what);
const name = z.string().optional().describe("Ignored");

export const OpenAIChatToolCall = z
	.object({
		id: z
			.string()
			.describe(
				"The call's id: the session's id and pi's call id, so that the tool's answer finds the run that waits for it",
			),
		type: z.literal("function").describe("Always `function`"),
		function: z
			.object({
				name: z.string().describe("The tool's name"),
				arguments: z.string().describe("The arguments, as JSON text"),
			})
			.describe("The function called"),
	})
	.openapi("OpenAIChatToolCall", {
		description: "A call the model made to one of the request's `tools`",
		example: {
			id: "call_ses_Qm9wYXJ0aWFs.demo_mxch",
			type: "function",
			function: { name: "lookup_price", arguments: '{"sku":"A-1"}' },
		},
	});

export type OpenAIChatToolCall = z.infer<typeof OpenAIChatToolCall>;

export const ChatMessage = z
	.discriminatedUnion("role", [
		z.object({
			role: z.literal("system").describe("`system`"),
			content: textContent("Added to pi's system prompt"),
			name,
		}),
		z.object({
			role: z.literal("developer").describe("`developer`: as `system`"),
			content: textContent("Added to pi's system prompt"),
			name,
		}),
		z.object({
			role: z.literal("user").describe("`user`"),
			content: z
				.union([z.string(), z.array(z.union([TextPart, ImagePart]))])
				.describe("The text, or parts: text and images"),
			name,
		}),
		z.object({
			role: z.literal("assistant").describe("`assistant`: an earlier answer"),
			content: z
				.union([z.string(), z.array(z.union([TextPart, RefusalPart]))])
				.nullable()
				.optional()
				.describe("What it said"),
			refusal: z.string().nullable().optional().describe("A refusal, kept as text"),
			tool_calls: z.array(OpenAIChatToolCall).optional().describe("The calls it made"),
			name,
		}),
		z.object({
			role: z.literal("tool").describe("`tool`: a call's result"),
			content: textContent("The tool's output"),
			tool_call_id: z.string().min(1).describe("The call it answers"),
		}),
	])
	.openapi("OpenAIChatMessage", { description: "One message of the conversation" });
export type ChatMessage = z.infer<typeof ChatMessage>;

const ChatTool = z
	.object({
		type: z.literal("function").describe("Always `function`"),
		function: z
			.object({
				name: z.string().describe("The tool's name (pi's own tool names are refused)"),
				description: z.string().optional().describe("What the tool does (default: its name)"),
				parameters: z
					.record(z.string(), z.unknown())
					.optional()
					.describe("A JSON Schema of an object: the arguments (default: any object)"),
				strict: z.boolean().nullable().optional().describe("Ignored: pi checks the arguments against the schema"),
			})
			.describe("The function"),
	})
	.openapi("OpenAIChatTool", {
		description: "A function the calling program runs: a client tool of the run's session (docs/client-tools.md)",
	});

const ResponseFormat = z.discriminatedUnion("type", [
	z.object({ type: z.literal("text").describe("Plain text (the default)") }),
	z.object({ type: z.literal("json_object").describe("Any JSON object (structured output with `type: object`)") }),
	z.object({
		type: z.literal("json_schema").describe("JSON valid against `json_schema.schema` (structured output)"),
		json_schema: z
			.object({
				name: z.string().describe("The schema's name"),
				description: z.string().optional().describe("Ignored"),
				schema: z.record(z.string(), z.unknown()).optional().describe("The JSON Schema: the run's `outputSchema`"),
				strict: z.boolean().nullable().optional().describe("Ignored: the answer is always checked"),
			})
			.describe("The schema"),
	}),
]);

const tokens = z.number().int().min(1).nullable().optional();

export const ChatCompletionRequest = z
	.looseObject({
		model: z.string().min(1).describe("One of `GET /v1/models`: `provider/id`, or a model id pi knows"),
		messages: z.array(ChatMessage).min(1).max(10_000).describe("The conversation; the last user message is the prompt"),
		stream: z.boolean().nullable().optional().describe("`true`: OpenAI's chunks as Server-Sent Events"),
		stream_options: z
			.object({ include_usage: z.boolean().optional().describe("A last chunk with `usage` and no choices") })
			.nullable()
			.optional()
			.describe("With `stream: true`"),
		tools: z.array(ChatTool).max(64).optional().describe("Functions the model may call: the session's client tools"),
		tool_choice: z
			.union([
				z.enum(["none", "auto", "required"]),
				z.object({ type: z.literal("function").describe("A function by name: refused") }).loose(),
			])
			.optional()
			.describe("`auto` (the default) or `none`; the others are 400"),
		parallel_tool_calls: z.boolean().optional().describe("Ignored"),
		max_tokens: tokens.describe("As `max_completion_tokens`"),
		max_completion_tokens: tokens.describe(
			"Output tokens the answer may take, as pi reports them while the model streams: reached, the run is aborted and `finish_reason` is `length`",
		),
		response_format: ResponseFormat.optional().describe(
			"`json_schema` and `json_object` run with the gateway's structured output (its `outputSchema`)",
		),
		reasoning_effort: z
			.enum(["none", "minimal", "low", "medium", "high", "xhigh"])
			.nullable()
			.optional()
			.describe("pi's thinking level (`none` is `off`)"),
		store: z
			.boolean()
			.nullable()
			.optional()
			.describe("`true`: keep the completion's session and pi's session file instead of deleting them"),
		pi: z
			.object({
				extensions: z
					.array(z.string().min(1))
					.max(50)
					.optional()
					.describe("Extensions the session loads, from the gateway's allow-list (`permission-gate`, …)"),
				cwd: z
					.string()
					.min(1)
					.max(4096)
					.optional()
					.describe("The session's working folder, as `cwd` of POST /v1/sessions"),
			})
			.optional()
			.describe("The gateway's own: what the completion's session is started with (`extra_body` in OpenAI's SDKs)"),
		n: z.number().int().nullable().optional().describe("Only 1"),
		logprobs: z.boolean().nullable().optional().describe("Only `false`"),
	})
	.openapi("OpenAIChatCompletionRequest", {
		description: "OpenAI's `CreateChatCompletionRequest`, the subset docs/openai.md lists; other fields are ignored",
		example: { model: "pi-gateway-demo/demo", messages: [{ role: "user", content: "echo: hello" }] },
	});
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequest>;
