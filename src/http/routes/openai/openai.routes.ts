import { createRoute } from "@hono/zod-openapi";
import { json, jsonBody } from "../../transport/openapi.ts";
import { ChatCompletionRequest } from "./chat.schemas.ts";
import { ChatCompletion, ChatCompletionChunk } from "./chat-answer.schemas.ts";
import { ModelParams, OpenAIModel, OpenAIModelList } from "./models.schemas.ts";
import { openaiErrors } from "./openai.errors.ts";
import {
	DeletedResponse,
	OpenAIResponse,
	ResponseCreateRequest,
	ResponseParams,
	ResponseStreamEvent,
} from "./responses.schemas.ts";

export const listModels = createRoute({
	operationId: "openai.models.list",
	method: "get",
	path: "/v1/models",
	tags: ["openai"],
	summary: "The gateway's models, in OpenAI's shape",
	description:
		"What pi offers with the gateway's providers (the list `GET /v1/sessions/{id}/models` answers for a plain session), read once by starting a session with the caller's key and kept for 5 minutes. A key that may not start sessions, before the list was read, gets the gateway's default model only. docs/openai.md",
	request: {},
	responses: {
		200: json(OpenAIModelList, "The models"),
		...openaiErrors(401, 403, 429, 502, 503),
	},
});

export const getModel = createRoute({
	operationId: "openai.models.get",
	method: "get",
	path: "/v1/models/{model}",
	tags: ["openai"],
	summary: "One model, in OpenAI's shape",
	request: { params: ModelParams },
	responses: {
		200: json(OpenAIModel, "The model"),
		...openaiErrors(401, 403, 404, 429, 502, 503),
	},
});

export const createChatCompletion = createRoute({
	operationId: "openai.chat.completions.create",
	method: "post",
	path: "/v1/chat/completions",
	tags: ["openai"],
	summary: "OpenAI Chat Completions (a subset): one run of a session of its own",
	description:
		"Each call starts a session with the caller's key (`model` its model, system messages and the earlier turns appended to pi's system prompt, `tools` its client tools), sends the last user message as a prompt and answers with what the run said: JSON, or with `stream: true` OpenAI's chunks ending with `data: [DONE]`. The session is deleted once the answer is complete, unless `store: true`. A run that calls one of `tools` answers `finish_reason: tool_calls`; its session waits (10 minutes at most) for the next call, whose `tool` messages answer those calls, and the same run goes on. docs/openai.md says what maps to what and what is not supported.",
	request: { body: jsonBody(ChatCompletionRequest) },
	responses: {
		200: {
			description:
				"The completion (JSON), or with `stream: true` a stream of `data: <OpenAIChatCompletionChunk>` frames ending with `data: [DONE]`",
			headers: {
				"X-Pi-Gateway-Session": {
					description: "The session the completion ran in (GET /v1/sessions/{id}, the console)",
					schema: { type: "string" as const },
				},
			},
			content: {
				"application/json": { schema: ChatCompletion },
				"text/event-stream": { schema: ChatCompletionChunk },
			},
		},
		...openaiErrors(400, 401, 403, 404, 413, 415, 429, 500, 502, 503, 504),
	},
});

export const createResponse = createRoute({
	operationId: "openai.responses.create",
	method: "post",
	path: "/v1/responses",
	tags: ["openai"],
	summary: "OpenAI Responses (a subset): a run of a session that the next response can go on in",
	description:
		"The first response starts a session with the caller's key (as a chat completion does: `instructions` appended to pi's system prompt, `tools` its client tools), later ones name it by `previous_response_id` and prompt the same pi session. The session is kept (`store: false` deletes it once answered). Calls to `tools` end the response with `function_call` items; the next response's `function_call_output` items answer them and the same run goes on. `stream: true`: OpenAI's events, each with its `sequence_number`. docs/openai.md",
	request: { body: jsonBody(ResponseCreateRequest) },
	responses: {
		200: {
			description: "The response (JSON), or with `stream: true` its events (`event: <type>`, `data: <event>`)",
			headers: {
				"X-Pi-Gateway-Session": {
					description: "The session the response ran in (GET /v1/sessions/{id}, the console)",
					schema: { type: "string" as const },
				},
			},
			content: {
				"application/json": { schema: OpenAIResponse },
				"text/event-stream": { schema: ResponseStreamEvent },
			},
		},
		...openaiErrors(400, 401, 403, 404, 413, 415, 429, 500, 502, 503, 504),
	},
});

export const getResponse = createRoute({
	operationId: "openai.responses.get",
	method: "get",
	path: "/v1/responses/{response_id}",
	tags: ["openai"],
	summary: "One response, as it is now",
	description:
		"A response of this gateway process to the principal that made it (each principal's last 1000, within 32 Mi characters of JSON, are kept in memory), while its session is one the key may read: another principal's, one forgotten or deleted, is 404. A background response is `in_progress` until its run ends.",
	request: { params: ResponseParams },
	responses: {
		200: json(OpenAIResponse, "The response"),
		...openaiErrors(401, 403, 404, 429, 503),
	},
});

export const cancelResponse = createRoute({
	operationId: "openai.responses.cancel",
	method: "post",
	path: "/v1/responses/{response_id}/cancel",
	tags: ["openai"],
	summary: "Cancel a background response",
	description:
		"Cancels the run of a response made with `background: true` and answers once it stopped (`status: cancelled`, with what was said until then). A response that already ended is answered as it is; one not made in the background is 400 `not_background`. Its session stays.",
	request: { params: ResponseParams },
	responses: {
		200: json(OpenAIResponse, "The response, as it ended"),
		...openaiErrors(400, 401, 403, 404, 429, 503),
	},
});

export const deleteResponse = createRoute({
	operationId: "openai.responses.delete",
	method: "delete",
	path: "/v1/responses/{response_id}",
	tags: ["openai"],
	summary: "Forget a response",
	description:
		"The gateway forgets the response (a background one still running is cancelled first); later GETs are 404. Its session, and pi's session file, stay: `DELETE /v1/sessions/{id}` deletes them.",
	request: { params: ResponseParams },
	responses: {
		200: json(DeletedResponse, "Forgotten"),
		...openaiErrors(401, 403, 404, 429, 503),
	},
});
