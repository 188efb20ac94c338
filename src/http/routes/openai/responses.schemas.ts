import { z } from "@hono/zod-openapi";

// OpenAI's Responses API, the subset the gateway honours (docs/openai.md). Objects are not strict:
// a field the gateway does not know is ignored, as documented.

const InputPart = z
	.object({
		type: z.enum(["input_text", "output_text", "input_image"]).describe("`input_text`, `output_text` or `input_image`"),
		text: z.string().optional().describe("The text (`input_text`, `output_text`)"),
		image_url: z.string().optional().describe("`input_image`: a `data:image/…;base64,…` URL"),
	})
	.loose()
	.describe("A part of a message");

export const ResponseInputItem = z
	.object({
		type: z
			.enum(["message", "function_call", "function_call_output"])
			.optional()
			.describe("`message` (the default), `function_call` (an earlier call) or `function_call_output` (its result)"),
		role: z.enum(["user", "assistant", "system", "developer"]).optional().describe("A message's role"),
		content: z
			.union([z.string(), z.array(InputPart)])
			.optional()
			.describe("A message's text, or its parts"),
		call_id: z.string().optional().describe("The call a `function_call` made or a `function_call_output` answers"),
		name: z.string().optional().describe("A `function_call`'s function"),
		arguments: z.string().optional().describe("A `function_call`'s arguments, as JSON text"),
		output: z.string().optional().describe("A `function_call_output`'s result"),
	})
	.loose()
	.describe("One item of `input`");
export type ResponseInputItem = z.infer<typeof ResponseInputItem>;

/**
 * OpenAI's bounds on `metadata`: the store keeps it with each of a principal's last 1000 responses,
 * in memory, so unbounded it let one principal hold gigabytes of the gateway's memory (8 MiB bodies).
 */
const Metadata = z
	.record(z.string(), z.string())
	.refine(
		(m) => {
			const pairs = Object.entries(m);
			return pairs.length <= 16 && pairs.every(([key, value]) => key.length <= 64 && value.length <= 512);
		},
		{ message: "At most 16 pairs, keys of at most 64 characters and values of at most 512" },
	)
	.describe("Kept with the response, as given: at most 16 pairs, keys of at most 64 characters, values of at most 512");

export const ResponseCreateRequest = z
	.looseObject({
		model: z.string().min(1).describe("One of `GET /v1/models`"),
		input: z
			.union([z.string(), z.array(ResponseInputItem).min(1).max(10_000)])
			.describe("The user's message, or items: messages, earlier calls and their outputs"),
		instructions: z
			.string()
			.max(100_000)
			.nullable()
			.optional()
			.describe(
				"Added to pi's system prompt when the response starts a session (ignored when it continues one); at most 100,000 characters",
			),
		previous_response_id: z
			.string()
			.nullable()
			.optional()
			.describe("Go on in that response's session: same pi session, same conversation"),
		stream: z.boolean().nullable().optional().describe("`true`: OpenAI's events as Server-Sent Events"),
		tools: z
			.array(
				z
					.object({
						type: z.literal("function").describe("Only `function`"),
						name: z.string().describe("The function's name"),
						description: z.string().nullable().optional().describe("What it does"),
						parameters: z
							.record(z.string(), z.unknown())
							.nullable()
							.optional()
							.describe("A JSON Schema of its arguments"),
						strict: z.boolean().nullable().optional().describe("Ignored"),
					})
					.describe("A function the calling program runs"),
			)
			.max(64)
			.optional()
			.describe("Functions the model may call: the session's client tools (fixed when the session starts)"),
		text: z
			.object({
				format: z
					.object({
						type: z.enum(["text", "json_object", "json_schema"]).describe("`json_schema`: structured output"),
						name: z.string().optional().describe("The schema's name"),
						schema: z.record(z.string(), z.unknown()).optional().describe("The JSON Schema: the run's `outputSchema`"),
						strict: z.boolean().nullable().optional().describe("Ignored"),
					})
					.loose()
					.optional()
					.describe("The answer's format"),
			})
			.loose()
			.optional()
			.describe("`format` of the text"),
		max_output_tokens: z.number().int().min(1).nullable().optional().describe("As Chat Completions' `max_tokens`"),
		metadata: Metadata.nullable().optional(),
		store: z
			.boolean()
			.nullable()
			.optional()
			.describe("`false`: the session is deleted once the response is complete (it cannot be continued)"),
		conversation: z
			.union([
				z.string().min(1).max(300),
				z.object({ id: z.string().min(1).max(300).describe("The session's id") }).describe("A conversation by id"),
			])
			.nullable()
			.optional()
			.describe(
				"A gateway session's id (`ses_…`: one of `GET /v1/sessions`, or the `X-Pi-Gateway-Session` of an earlier response): the response goes on in that session. Not with `previous_response_id`",
			),
		background: z
			.boolean()
			.nullable()
			.optional()
			.describe(
				"`true`: answered at once (`status: in_progress`); the run goes on without the request, `GET /v1/responses/{id}` reads it, `POST …/cancel` stops it. Not with `stream` or `store: false`",
			),
	})
	.openapi("OpenAIResponseCreateRequest", {
		description: "OpenAI's `ResponseCreateParams`, the subset docs/openai.md lists",
		example: { model: "pi-gateway-demo/demo", input: "echo: hello" },
	});
export type ResponseCreateRequest = z.infer<typeof ResponseCreateRequest>;

const OutputItem = z
	.object({
		type: z.enum(["message", "function_call"]).describe("`message` or `function_call`"),
		id: z.string().describe("The item's id"),
		status: z.string().describe("`completed` (or `in_progress` while streaming)"),
		role: z.literal("assistant").optional().describe("A message's role"),
		content: z
			.array(
				z
					.object({
						type: z.literal("output_text").describe("Always `output_text`"),
						text: z.string().describe("The text"),
						annotations: z.array(z.unknown()).describe("Always empty"),
					})
					.describe("A part of the message"),
			)
			.optional()
			.describe("A message's parts"),
		call_id: z.string().optional().describe("A call's id: answer it with a `function_call_output` of this id"),
		name: z.string().optional().describe("A call's function"),
		arguments: z.string().optional().describe("A call's arguments, as JSON text"),
	})
	.describe("One item the response produced");

export const OpenAIResponse = z
	.object({
		id: z.string().describe("`resp_`, the session's id and a suffix: `previous_response_id` of the next response"),
		object: z.literal("response").describe("Always `response`"),
		created_at: z.number().int().describe("Unix seconds"),
		status: z
			.enum(["completed", "incomplete", "in_progress", "failed", "cancelled"])
			.describe("`incomplete` when `max_output_tokens` cut the answer; `cancelled`: a background response cancelled"),
		model: z.string().describe("The session's model, `provider/id`"),
		output: z.array(OutputItem).describe("The answer's text, and calls to the request's `tools`"),
		output_text: z.string().describe("The text of every `output_text`, joined"),
		previous_response_id: z.string().nullable().describe("As requested"),
		instructions: z.string().nullable().describe("As requested"),
		metadata: z.record(z.string(), z.string()).describe("As requested"),
		incomplete_details: z
			.object({ reason: z.string().describe("`max_output_tokens`") })
			.nullable()
			.describe("Why the answer is incomplete"),
		error: z
			.object({ code: z.string().describe("The code"), message: z.string().describe("What went wrong") })
			.nullable()
			.describe("A failed response's error"),
		usage: z
			.object({
				input_tokens: z.number().int().describe("Input tokens, cache included"),
				input_tokens_details: z
					.object({ cached_tokens: z.number().int().describe("Read from the provider's cache") })
					.describe("Input in detail"),
				output_tokens: z.number().int().describe("Output tokens"),
				output_tokens_details: z
					.object({ reasoning_tokens: z.number().int().describe("Always 0: pi counts them as output") })
					.describe("Output in detail"),
				total_tokens: z.number().int().describe("The two added"),
			})
			.describe("Usage of the model calls this response took (pi's `usage`, added up)"),
		store: z.boolean().describe("Whether its session is kept"),
		background: z.boolean().describe("As requested"),
		conversation: z
			.object({ id: z.string().describe("The session's id") })
			.nullable()
			.describe("As requested: the session it went on in"),
	})
	.openapi("OpenAIResponse", {
		description: "OpenAI's `Response`: what a response said and did",
		example: {
			id: "resp_ses_Qm9wYXJ0aWFs.x7Kq",
			object: "response",
			created_at: 1764583200,
			status: "completed",
			model: "pi-gateway-demo/demo",
			output: [
				{
					type: "message",
					id: "msg_x7Kq_0",
					status: "completed",
					role: "assistant",
					content: [{ type: "output_text", text: "hello", annotations: [] }],
				},
			],
			output_text: "hello",
			previous_response_id: null,
			instructions: null,
			metadata: {},
			incomplete_details: null,
			error: null,
			usage: {
				input_tokens: 2,
				input_tokens_details: { cached_tokens: 0 },
				output_tokens: 2,
				output_tokens_details: { reasoning_tokens: 0 },
				total_tokens: 4,
			},
			store: true,
			background: false,
			conversation: null,
		},
	});
export type OpenAIResponse = z.infer<typeof OpenAIResponse>;

export const ResponseStreamEvent = z
	.object({
		type: z.string().describe("OpenAI's event name, also the frame's `event:`"),
		sequence_number: z.number().int().describe("0, 1, 2, … in the order sent"),
	})
	.loose()
	.openapi("OpenAIResponseStreamEvent", {
		description:
			"One event of a streamed response: `response.created`, `response.in_progress`, `response.output_item.added`, `response.content_part.added`, `response.output_text.delta`, `response.output_text.done`, `response.content_part.done`, `response.function_call_arguments.delta`, `response.function_call_arguments.done`, `response.output_item.done`, then `response.completed` (or `response.incomplete`, `response.failed`), with OpenAI's fields",
	});

export const ResponseParams = z.object({
	response_id: z
		.string()
		.min(1)
		.max(300)
		.openapi({
			param: { name: "response_id", in: "path" },
			description: "A response's id",
			example: "resp_ses_Qm9wYXJ0aWFs.x7Kq",
		}),
});

export const DeletedResponse = z
	.object({
		id: z.string().describe("The response's id"),
		object: z.literal("response").describe("Always `response`"),
		deleted: z.literal(true).describe("Always `true`"),
	})
	.openapi("OpenAIDeletedResponse", {
		description: "A response forgotten: its session stays",
		example: { id: "resp_ses_Qm9wYXJ0aWFs.x7Kq", object: "response", deleted: true },
	});
