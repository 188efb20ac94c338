import { randomBytes } from "node:crypto";
import { ApiError } from "../../transport/problem.ts";
import type { ChatCompletionRequest, ChatMessage } from "./chat.schemas.ts";
import { type ChatPlan, planChat } from "./chat-input.ts";
import type { ResponseCreateRequest, ResponseInputItem } from "./responses.schemas.ts";

type Part = Exclude<ResponseInputItem["content"], string | undefined>[number];

/** A response's id: its session's, so that `previous_response_id` names where to go on. */
export const newResponseId = (sessionId: string) => `resp_${sessionId}.${randomBytes(6).toString("base64url")}`;

export function sessionOfResponse(id: string): string | undefined {
	return /^resp_(ses_[A-Za-z0-9_-]{1,64})\.[A-Za-z0-9_-]{1,32}$/.exec(id)?.[1];
}

/** `conversation`: a gateway session's id (`ses_…`, or `{id}`), which the response goes on in. */
export function conversationOf(body: ResponseCreateRequest): { id: string } | undefined {
	const id = typeof body.conversation === "string" ? body.conversation : body.conversation?.id;
	return id === undefined || id === null ? undefined : { id };
}

export const responseNotFound = (param: string | null = null) =>
	new ApiError(404, "response_not_found", "No such response for this key", { param } as never);

function partsOf(content: ResponseInputItem["content"], role: string) {
	if (typeof content === "string" || content === undefined) return content ?? "";
	return content.map((part: Part) => {
		if (part.type === "input_image" && role === "user")
			return { type: "image_url" as const, image_url: { url: part.image_url ?? "" } };
		return { type: "text" as const, text: part.text ?? "" };
	});
}

/** Responses' items as a chat conversation: messages, calls as an assistant's `tool_calls`, outputs as `tool` messages. */
function messagesOf(items: ResponseInputItem[]): ChatMessage[] {
	const messages: ChatMessage[] = [];
	for (const item of items) {
		if (item.type === "function_call_output")
			messages.push({ role: "tool", tool_call_id: item.call_id ?? "", content: item.output ?? "" });
		else if (item.type === "function_call") {
			const call = {
				id: item.call_id ?? "",
				type: "function" as const,
				function: { name: item.name ?? "", arguments: item.arguments ?? "{}" },
			};
			const last = messages.at(-1);
			if (last?.role === "assistant") last.tool_calls = [...(last.tool_calls ?? []), call];
			else messages.push({ role: "assistant", content: null, tool_calls: [call] });
		} else {
			const role = item.role ?? "user";
			messages.push({ role, content: partsOf(item.content, role) } as ChatMessage);
		}
	}
	return messages;
}

/**
 * A Responses call as the chat completion it runs like (planChat), in the session of
 * `previous_response_id` when it names one. Unlike a chat completion, a response's session is kept
 * (`store`, true by default), so that the next response can go on in it.
 */
export function planResponse(body: ResponseCreateRequest): ChatPlan {
	if (body.background && body.stream)
		throw new ApiError(
			400,
			"unsupported_parameter",
			"A background response is not streamed: poll GET /v1/responses/{id}",
			{
				param: "stream",
			} as never,
		);
	if (body.background && body.store === false)
		throw new ApiError(400, "invalid_request", "A background response must be stored (`store: false` is refused)", {
			param: "store",
		} as never);
	if (body.previous_response_id && body.conversation)
		throw new ApiError(
			400,
			"invalid_request",
			"`previous_response_id` and `conversation` name where to go on: give one",
			{
				param: "conversation",
			} as never,
		);
	const conversation = conversationOf(body);
	const continueIn = body.previous_response_id ? sessionOfResponse(body.previous_response_id) : conversation?.id;
	if (body.previous_response_id && !continueIn) throw responseNotFound("previous_response_id");
	const items = typeof body.input === "string" ? [{ role: "user" as const, content: body.input }] : body.input;
	const messages = messagesOf(items);
	if (body.instructions && !continueIn) messages.unshift({ role: "system", content: body.instructions });
	const format = body.text?.format;
	const chat: ChatCompletionRequest = {
		model: body.model,
		messages,
		store: body.store !== false,
		max_completion_tokens: body.max_output_tokens ?? undefined,
		...(body.tools && {
			tools: body.tools.map((t) => ({
				type: "function" as const,
				function: {
					name: t.name,
					...(t.description && { description: t.description }),
					...(t.parameters && { parameters: t.parameters }),
				},
			})),
		}),
		...(format?.type === "json_schema" && {
			response_format: { type: "json_schema", json_schema: { name: format.name ?? "output", schema: format.schema } },
		}),
		...(format?.type === "json_object" && { response_format: { type: "json_object" } }),
	};
	const plan = planChat(chat);
	plan.create.name = "openai: response";
	return {
		...plan,
		...(continueIn && {
			continueIn,
			continueBy: conversation ? ("conversation" as const) : ("previous_response_id" as const),
		}),
	};
}
