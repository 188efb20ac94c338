import { z } from "@hono/zod-openapi";
import { OpenAIChatToolCall } from "./chat.schemas.ts";

// OpenAI's Chat Completions answers, as the gateway writes them (docs/openai.md).

export const OpenAICompletionUsage = z
	.object({
		prompt_tokens: z.number().int().describe("Input tokens of the run's model calls, cache included"),
		completion_tokens: z.number().int().describe("Output tokens of the run's model calls"),
		total_tokens: z.number().int().describe("The two added"),
		prompt_tokens_details: z
			.object({ cached_tokens: z.number().int().describe("Input tokens read from the provider's cache") })
			.describe("Input tokens in detail"),
		completion_tokens_details: z
			.object({ reasoning_tokens: z.number().int().describe("Always 0: pi counts them as output") })
			.describe("Output tokens in detail"),
	})
	.openapi("OpenAICompletionUsage", {
		description: "Usage of the model calls this answer took (pi's `usage`, added up)",
		example: {
			prompt_tokens: 3,
			completion_tokens: 2,
			total_tokens: 5,
			prompt_tokens_details: { cached_tokens: 0 },
			completion_tokens_details: { reasoning_tokens: 0 },
		},
	});
export type OpenAICompletionUsage = z.infer<typeof OpenAICompletionUsage>;

const FinishReason = z
	.enum(["stop", "length", "tool_calls", "content_filter"])
	.describe("`stop`, `length` (max tokens, or the model's own limit) or `tool_calls`");
const id = z.string().describe("`chatcmpl-` and the session's and run's ids");
const created = z.number().int().describe("Unix seconds");
const model = z.string().describe("The session's model, `provider/id`");
const index = z.number().int().describe("Always 0");
// Always null, typed as a nullable string: OpenAPI 3.0 has no type of null alone.
const logprobs = z.string().nullable().describe("Always null");

export const ChatCompletion = z
	.object({
		id,
		object: z.literal("chat.completion").describe("Always `chat.completion`"),
		created,
		model,
		choices: z
			.array(
				z.object({
					index,
					message: z
						.object({
							role: z.literal("assistant").describe("Always `assistant`"),
							content: z.string().nullable().describe("The run's text (its turns' texts, a blank line apart)"),
							refusal: z.string().nullable().describe("Always null"),
							tool_calls: z.array(OpenAIChatToolCall).optional().describe("Calls to the request's `tools`"),
						})
						.describe("The answer"),
					logprobs,
					finish_reason: FinishReason,
				}),
			)
			.describe("One choice"),
		usage: OpenAICompletionUsage,
	})
	.openapi("OpenAIChatCompletion", {
		description: "OpenAI's `CreateChatCompletionResponse`",
		example: {
			id: "chatcmpl-ses_Qm9wYXJ0aWFs.gw_2",
			object: "chat.completion",
			created: 1764583200,
			model: "pi-gateway-demo/demo",
			choices: [
				{
					index: 0,
					message: { role: "assistant", content: "hello", refusal: null },
					logprobs: null,
					finish_reason: "stop",
				},
			],
			usage: {
				prompt_tokens: 3,
				completion_tokens: 2,
				total_tokens: 5,
				prompt_tokens_details: { cached_tokens: 0 },
				completion_tokens_details: { reasoning_tokens: 0 },
			},
		},
	});
export type ChatCompletion = z.infer<typeof ChatCompletion>;

const DeltaToolCall = z.object({
	index: z.number().int().describe("The call's place in the message"),
	id: z.string().optional().describe("The call's id"),
	type: z.literal("function").optional().describe("Always `function`"),
	function: z
		.object({
			name: z.string().optional().describe("The tool's name"),
			arguments: z.string().optional().describe("The arguments, as JSON text (whole, in one chunk)"),
		})
		.optional()
		.describe("The function called"),
});

export const ChatCompletionChunk = z
	.object({
		id,
		object: z.literal("chat.completion.chunk").describe("Always `chat.completion.chunk`"),
		created,
		model,
		choices: z
			.array(
				z.object({
					index,
					delta: z
						.object({
							role: z.literal("assistant").optional().describe("In the first chunk"),
							content: z.string().nullable().optional().describe("The next piece of text"),
							tool_calls: z.array(DeltaToolCall).optional().describe("Calls to the request's `tools`"),
						})
						.describe("What this chunk adds"),
					logprobs,
					finish_reason: FinishReason.nullable(),
				}),
			)
			.describe("One choice; none in the usage chunk"),
		usage: OpenAICompletionUsage.nullable()
			.optional()
			.describe("With `stream_options.include_usage`: null, then set in the last chunk"),
	})
	.openapi("OpenAIChatCompletionChunk", {
		description:
			"OpenAI's `CreateChatCompletionStreamResponse`: each `data:` of the stream, which ends with `data: [DONE]`",
		example: {
			id: "chatcmpl-ses_Qm9wYXJ0aWFs.gw_2",
			object: "chat.completion.chunk",
			created: 1764583200,
			model: "pi-gateway-demo/demo",
			choices: [{ index: 0, delta: { content: "hel" }, logprobs: null, finish_reason: null }],
		},
	});
export type ChatCompletionChunk = z.infer<typeof ChatCompletionChunk>;
