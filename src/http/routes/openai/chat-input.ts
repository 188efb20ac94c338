import type { PiGateway } from "../../../client/index.ts";
import { ApiError } from "../../transport/problem.ts";
import type { ChatCompletionRequest, ChatMessage } from "./chat.schemas.ts";

type CreateBody = Parameters<PiGateway["createSession"]>[0] & {};
type Image = { type: "image"; data: string; mimeType: string };

/** What one chat completion asks of the gateway, read off OpenAI's request. */
export interface ChatPlan {
	/** The trailing `tool` messages answer calls of this session's run, which waits for them. */
	resume?: { sessionId: string; results: Map<string, string> };
	/** A Responses call's `previous_response_id` or `conversation`: the prompt goes to this session, none is made. */
	continueIn?: string;
	/** Which of the two named it (the field a 404 blames). */
	continueBy?: "previous_response_id" | "conversation";
	/** The session a new run gets (used as well when `resume`'s session is gone); its model is added once resolved. */
	create: CreateBody;
	prompt: { message: string; images?: Image[]; outputSchema?: Record<string, unknown> };
	/** The request's function tools (the session's client tools). */
	toolNames: Set<string>;
	maxTokens?: number;
	store: boolean;
}

// pi's --append-system-prompt takes at most this much (CreateSession's `appendSystemPrompt`).
const maxSystemChars = 100_000;

const refused = (param: string, detail: string, code = "unsupported_parameter") =>
	new ApiError(400, code, detail, { param } as never);

/**
 * A call's id as the client sees it: the session's id and pi's, so that the `tool` message that
 * answers it names the run that waits (and a key that does not own the session finds nothing there).
 */
export const chatToolCallId = (sessionId: string, callId: string) => `call_${sessionId}.${callId}`;

export function readToolCallId(id: string): { sessionId: string; callId: string } | undefined {
	const match = /^call_(ses_[A-Za-z0-9_-]{1,64})\.([\s\S]{1,512})$/.exec(id);
	return match ? { sessionId: match[1] as string, callId: match[2] as string } : undefined;
}

type Content = ChatMessage["content"];

function textOf(content: Content): string {
	if (content === null || content === undefined) return "";
	if (typeof content === "string") return content;
	return content
		.map((part) => (part.type === "text" ? part.text : part.type === "refusal" ? part.refusal : "[image]"))
		.join("");
}

function line(message: ChatMessage): string {
	if (message.role === "tool") return `Tool result (${message.tool_call_id}): ${textOf(message.content)}`;
	if (message.role !== "assistant") return `${message.role === "user" ? "User" : "System"}: ${textOf(message.content)}`;
	const said = [textOf(message.content), message.refusal ?? ""].filter(Boolean).join("\n");
	const calls = (message.tool_calls ?? []).map((c) => `[called ${c.function.name} ${c.function.arguments} (${c.id})]`);
	return `Assistant: ${[said, ...calls].filter(Boolean).join("\n")}`;
}

function imagesOf(message: ChatMessage, at: number): Image[] | undefined {
	if (message.role !== "user" || typeof message.content === "string") return undefined;
	const images: Image[] = [];
	for (const part of message.content) {
		if (part.type !== "image_url") continue;
		const data = /^data:(image\/[\w.+-]+);base64,([A-Za-z0-9+/=\s]+)$/.exec(part.image_url.url);
		if (!data)
			throw refused(
				`messages[${at}].content`,
				"Images are taken as data: URLs (base64) only: the gateway fetches nothing",
			);
		images.push({ type: "image", mimeType: data[1] as string, data: (data[2] as string).replace(/\s/g, "") });
	}
	return images.length > 0 ? images : undefined;
}

function refuseUnsupported(body: ChatCompletionRequest): void {
	if ((body.n ?? 1) !== 1) throw refused("n", "Only one choice (n: 1) per completion");
	if (body.logprobs) throw refused("logprobs", "pi reports no log probabilities");
	const choice = body.tool_choice;
	if (choice !== undefined && choice !== "auto" && choice !== "none")
		throw refused("tool_choice", "tool_choice is `auto` or `none`: pi's model chooses its calls");
}

function outputSchemaOf(body: ChatCompletionRequest): Record<string, unknown> | undefined {
	const format = body.response_format;
	if (format?.type === "json_schema") return format.json_schema.schema ?? { type: "object" };
	if (format?.type === "json_object") return { type: "object" };
	return undefined;
}

/**
 * OpenAI's conversation as one run: the leading system (and developer) messages and the turns
 * before the last user message are appended to pi's system prompt, the last user message is the
 * prompt. pi's RPC takes no conversation but its own, so earlier turns reach the model as text.
 */
export function planChat(body: ChatCompletionRequest): ChatPlan {
	refuseUnsupported(body);
	const messages = body.messages;
	let end = messages.length;
	while (end > 0 && messages[end - 1]?.role === "tool") end--;
	const answers = messages.slice(end).map((m) => (m.role === "tool" ? m : undefined));
	const calls = answers.map((m) => (m ? readToolCallId(m.tool_call_id) : undefined));
	const first = calls[0];
	const resume =
		first && calls.every((c) => c?.sessionId === first.sessionId)
			? {
					sessionId: first.sessionId,
					results: new Map(calls.map((c, i) => [c?.callId as string, textOf(answers[i]?.content ?? "")])),
				}
			: undefined;

	let start = 0;
	while (start < messages.length && ["system", "developer"].includes(messages[start]?.role as string)) start++;
	const instructions = messages.slice(0, start).map((m) => textOf(m.content));
	const last = messages.at(-1) as ChatMessage;
	const promptAt = last.role === "user" && messages.length - 1 >= start ? messages.length - 1 : messages.length;
	const history = messages.slice(start, promptAt).map(line);
	const message =
		promptAt < messages.length
			? textOf(last.content)
			: last.role === "tool"
				? "The tool calls above returned (their results are in the conversation): go on."
				: "Go on from the conversation above.";
	const system = [
		...instructions,
		...(history.length > 0
			? [`[The conversation so far, as the client sent it; its last message follows]\n\n${history.join("\n\n")}`]
			: []),
	].join("\n\n");
	if (system.length > maxSystemChars)
		throw refused(
			"messages",
			`The conversation before its last message takes more than ${maxSystemChars} characters`,
			"context_length_exceeded",
		);

	const tools = body.tool_choice === "none" ? [] : (body.tools ?? []);
	const create: CreateBody = {
		name: "openai: chat completion",
		persist: body.store === true,
		...body.pi,
		...(system && { appendSystemPrompt: system }),
		...(tools.length > 0 && {
			clientTools: tools.map(({ function: f }) => ({
				name: f.name,
				description: f.description || f.name,
				parameters: f.parameters ?? { type: "object", properties: {} },
			})),
		}),
		...(body.reasoning_effort && {
			thinkingLevel: body.reasoning_effort === "none" ? "off" : body.reasoning_effort,
		}),
	};
	const images = promptAt < messages.length ? imagesOf(last, promptAt) : undefined;
	const outputSchema = outputSchemaOf(body);
	return {
		resume,
		create,
		prompt: { message, ...(images && { images }), ...(outputSchema && { outputSchema }) },
		toolNames: new Set(tools.map((t) => t.function.name)),
		maxTokens: body.max_completion_tokens ?? body.max_tokens ?? undefined,
		store: body.store === true,
	};
}
