import type { StreamEvent } from "../../../client/index.ts";
import { ApiError } from "../../transport/problem.ts";
import type { OpenAIChatToolCall } from "./chat.schemas.ts";
import type { OpenAICompletionUsage } from "./chat-answer.schemas.ts";
import { chatToolCallId } from "./chat-input.ts";

/** What a run says, as an OpenAI answer is made of it. */
export type Piece =
	| { kind: "text"; delta: string }
	/** The model called the client's tools: the answer ends here, the run waits for their results. */
	| { kind: "calls"; calls: OpenAIChatToolCall[] }
	/** A dialog holds the run until a person answers it (docs/approvals.md). */
	| { kind: "approval"; id: string; title: string; url: string }
	| { kind: "end"; finish: "stop" | "length" };

type Usage = { input?: number; output?: number; cacheRead?: number; cacheWrite?: number };
type Block = { type: string; id?: string; name?: string; arguments?: unknown };
type Message = { role?: string; content?: Block[] | string; usage?: Usage; stopReason?: string; errorMessage?: string };
type Event = { type: string; [key: string]: unknown };

/** Tokens of the run's model calls, added up from pi's `usage` of each assistant message. */
export class RunTally {
	input = 0;
	output = 0;
	cached = 0;
	/**
	 * Text deltas of the message the model is writing now: what `max_tokens` counts while it streams
	 * (a delta is about a token; pi's own figure is only final once the message ends).
	 */
	live = 0;

	add(usage: Usage | undefined): void {
		this.input += (usage?.input ?? 0) + (usage?.cacheRead ?? 0) + (usage?.cacheWrite ?? 0);
		this.cached += usage?.cacheRead ?? 0;
		this.output += usage?.output ?? 0;
		this.live = 0;
	}

	usage(): OpenAICompletionUsage {
		return {
			prompt_tokens: this.input,
			completion_tokens: this.output,
			total_tokens: this.input + this.output,
			prompt_tokens_details: { cached_tokens: this.cached },
			completion_tokens_details: { reasoning_tokens: 0 },
		};
	}
}

export interface FollowOptions {
	sessionId: string;
	/** The request's function tools: calls to them end the answer with `tool_calls`. */
	toolNames: Set<string>;
	maxTokens?: number;
	/** The run has an outputSchema: its validated JSON is the text, streamed once it is known. */
	structured: boolean;
	/** Results the client sent for calls not yet requested (pi runs a message's calls one by one). */
	results: Map<string, string>;
	answer(callId: string, output: string): Promise<void>;
	abort(): Promise<void>;
}

function calls(message: Message | undefined, options: FollowOptions): OpenAIChatToolCall[] {
	const blocks = Array.isArray(message?.content) ? message.content : [];
	return blocks
		.filter((b) => b.type === "toolCall" && b.name !== undefined && options.toolNames.has(b.name))
		.map((b) => ({
			id: chatToolCallId(options.sessionId, b.id as string),
			type: "function" as const,
			function: { name: b.name as string, arguments: JSON.stringify(b.arguments ?? {}) },
		}));
}

/** How the run ended, from its last assistant message (and structured output's verdict). */
function* ending(
	last: Message | undefined,
	cut: boolean,
	output: Event | undefined,
	options: FollowOptions,
): Generator<Piece, void> {
	if (cut) return yield { kind: "end", finish: "length" };
	if (last?.stopReason === "error") throw new ApiError(502, "model_error", last.errorMessage ?? "The model failed");
	if (last?.stopReason === "aborted")
		throw new ApiError(502, "run_aborted", "The run was aborted (POST …/abort, a run limit, or pi's exit)");
	if (options.structured) {
		const error = output?.error as { message?: string } | undefined;
		if (!output || error)
			throw new ApiError(422, "structured_output_failed", error?.message ?? "The run gave no structured output");
		yield { kind: "text", delta: JSON.stringify(output.output) };
	}
	yield { kind: "end", finish: last?.stopReason === "length" ? "length" : "stop" };
}

/**
 * A run's events as pieces of an OpenAI answer: the assistant's text deltas (turns a blank line
 * apart), a pause at a call to the client's tools, dialogs that hold the run, its end. Usage adds
 * up in `tally`. Past `maxTokens` output tokens the run is aborted and ends with `length`.
 */
export async function* follow(
	events: AsyncIterable<StreamEvent>,
	options: FollowOptions,
	tally: RunTally,
): AsyncGenerator<Piece> {
	let last: Message | undefined;
	let output: Event | undefined;
	let wrote = false;
	let inMessage = false;
	let cut = false;
	for await (const raw of events) {
		const event = raw as Event;
		if (event.type === "message_start" && (event.message as Message)?.role === "assistant") inMessage = false;
		else if (event.type === "message_update" && !cut) {
			const update = event.assistantMessageEvent as { type?: string; delta?: string } | undefined;
			if (update?.type !== "text_delta" || !update.delta) continue;
			tally.live++;
			if (!options.structured) {
				if (wrote && !inMessage) yield { kind: "text", delta: "\n\n" };
				wrote = inMessage = true;
				yield { kind: "text", delta: update.delta };
			}
			if (options.maxTokens !== undefined && tally.output + tally.live >= options.maxTokens) {
				cut = true;
				await options.abort();
			}
		} else if (event.type === "message_end" && (event.message as Message)?.role === "assistant") {
			last = event.message as Message;
			tally.add(last.usage);
		} else if (event.type === "tool_call_requested") {
			// Every such call is a client tool's: one declared when the session started counts even
			// when this request (a later response in the session) did not repeat the tools.
			options.toolNames.add(event.name as string);
			const id = event.toolCallId as string;
			const result = options.results.get(id);
			if (result === undefined) return yield { kind: "calls", calls: calls(last, options) };
			options.results.delete(id);
			await options.answer(id, result);
		} else if (event.type === "approval_requested") {
			const approval = event.approval as { id: string; title?: string };
			const url = `/v1/sessions/${options.sessionId}/approvals/${approval.id}`;
			yield { kind: "approval", id: approval.id, title: approval.title ?? "", url };
		} else if (event.type === "run_output") output = event;
		else if (event.type === "agent_settled") return yield* ending(last, cut, output, options);
		else if (event.type === "session_exit") throw new ApiError(502, "pi_exited", "pi exited before the run ended");
		else if (event.type === "revoked")
			throw new ApiError(401, "access_revoked", String(event.detail ?? "The caller's access was revoked"));
	}
	throw new ApiError(502, "run_lost", "The run's events ended before the run did");
}
