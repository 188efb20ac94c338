import { ApiError } from "../../transport/problem.ts";
import type { OpenAIChatToolCall } from "./chat.schemas.ts";
import type { ChatRun } from "./chat-run.ts";
import type { OpenAIResponse, ResponseCreateRequest } from "./responses.schemas.ts";
import { conversationOf } from "./responses-input.ts";
import type { Piece } from "./run-follow.ts";

type Event = { type: string; [key: string]: unknown };
type Item = OpenAIResponse["output"][number];

/**
 * One response as its run goes: the object GET /v1/responses/{id} answers, and the events of
 * OpenAI's stream (each numbered), made from the run's pieces.
 */
export class ResponseBuilder {
	readonly id: string;
	readonly #run: ChatRun;
	readonly #body: ResponseCreateRequest;
	readonly #created = Math.floor(Date.now() / 1000);
	readonly #suffix: string;
	#seq = 0;
	#text: string | undefined;
	#output: Item[] = [];
	#status: OpenAIResponse["status"] = "in_progress";
	#error: OpenAIResponse["error"] = null;
	#incomplete = false;

	constructor(id: string, run: ChatRun, body: ResponseCreateRequest) {
		this.id = id;
		this.#run = run;
		this.#body = body;
		this.#suffix = id.slice(id.lastIndexOf(".") + 1);
	}

	snapshot(): OpenAIResponse {
		const output = this.#text === undefined ? this.#output : [...this.#output, this.#message("in_progress")];
		return {
			id: this.id,
			object: "response",
			created_at: this.#created,
			status: this.#status,
			model: this.#run.model,
			output,
			output_text: output
				.flatMap((item) => item.content ?? [])
				.map((part) => part.text)
				.join(""),
			previous_response_id: this.#body.previous_response_id ?? null,
			instructions: this.#body.instructions ?? null,
			metadata: this.#body.metadata ?? {},
			incomplete_details: this.#incomplete ? { reason: "max_output_tokens" } : null,
			error: this.#error,
			usage: (({ prompt_tokens, completion_tokens, total_tokens, prompt_tokens_details }) => ({
				input_tokens: prompt_tokens,
				input_tokens_details: prompt_tokens_details,
				output_tokens: completion_tokens,
				output_tokens_details: { reasoning_tokens: 0 },
				total_tokens,
			}))(this.#run.tally.usage()),
			store: this.#body.store !== false,
			background: this.#body.background === true,
			conversation: conversationOf(this.#body) ?? null,
		};
	}

	#event(type: string, fields: Record<string, unknown> = {}): Event {
		return { type, sequence_number: this.#seq++, ...fields };
	}

	#message(status: string): Item {
		const content = [{ type: "output_text" as const, text: this.#text ?? "", annotations: [] }];
		return { type: "message", id: `msg_${this.#suffix}`, status, role: "assistant", content };
	}

	start(): Event[] {
		return [
			this.#event("response.created", { response: this.snapshot() }),
			this.#event("response.in_progress", { response: this.snapshot() }),
		];
	}

	/** The events a piece makes (a dialog waiting makes none: OpenAI's stream has no word for it). */
	add(piece: Piece): Event[] {
		if (piece.kind === "text") return this.#delta(piece.delta);
		if (piece.kind === "calls") return [...this.#closeText(), ...piece.calls.flatMap((call) => this.#call(call))];
		if (piece.kind === "end") {
			this.#incomplete = piece.finish === "length";
			return this.#closeText();
		}
		return [];
	}

	finish(): Event {
		this.#status = this.#incomplete ? "incomplete" : "completed";
		return this.#event(`response.${this.#status}`, { response: this.snapshot() });
	}

	/** A background response whose run was cancelled (POST /v1/responses/{id}/cancel, DELETE). */
	cancelled(): void {
		this.#closeText();
		this.#status = "cancelled";
	}

	fail(error: unknown): Event {
		this.#status = "failed";
		const problem = error instanceof ApiError ? error : new ApiError(500, "internal_error", "The run failed");
		this.#error = { code: problem.code, message: problem.message };
		return this.#event("response.failed", { response: this.snapshot() });
	}

	#delta(delta: string): Event[] {
		const where = { item_id: `msg_${this.#suffix}`, output_index: this.#output.length, content_index: 0 };
		const opening =
			this.#text === undefined
				? [
						this.#event("response.output_item.added", {
							output_index: where.output_index,
							item: { ...this.#message("in_progress"), content: [] },
						}),
						this.#event("response.content_part.added", {
							...where,
							part: { type: "output_text", text: "", annotations: [] },
						}),
					]
				: [];
		this.#text = (this.#text ?? "") + delta;
		return [...opening, this.#event("response.output_text.delta", { ...where, delta, logprobs: [] })];
	}

	#closeText(): Event[] {
		if (this.#text === undefined) return [];
		const where = { item_id: `msg_${this.#suffix}`, output_index: this.#output.length, content_index: 0 };
		const item = this.#message("completed");
		const part = item.content?.[0];
		this.#output.push(item);
		const text = this.#text;
		this.#text = undefined;
		return [
			this.#event("response.output_text.done", { ...where, text, logprobs: [] }),
			this.#event("response.content_part.done", { ...where, part }),
			this.#event("response.output_item.done", { output_index: where.output_index, item }),
		];
	}

	#call(call: OpenAIChatToolCall): Event[] {
		const output_index = this.#output.length;
		const item: Item = {
			type: "function_call",
			id: `fc_${this.#suffix}_${output_index}`,
			status: "completed",
			call_id: call.id,
			name: call.function.name,
			arguments: call.function.arguments,
		};
		this.#output.push(item);
		const where = { item_id: item.id, output_index };
		return [
			this.#event("response.output_item.added", {
				output_index,
				item: { ...item, status: "in_progress", arguments: "" },
			}),
			this.#event("response.function_call_arguments.delta", { ...where, delta: item.arguments }),
			this.#event("response.function_call_arguments.done", { ...where, arguments: item.arguments }),
			this.#event("response.output_item.done", { output_index, item }),
		];
	}
}

const encoder = new TextEncoder();
const frame = (event: Event) => encoder.encode(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);

/**
 * OpenAI's response stream: `response.created` … `response.completed`, each event with its
 * `sequence_number`. A dialog that holds the run is a comment line, as in Chat Completions.
 * `saved` keeps the object GET answers up to date; the client leaving ends the run.
 */
export function responseStream(
	builder: ResponseBuilder,
	run: ChatRun,
	saved: (response: OpenAIResponse) => void,
	onCancel: () => void,
): ReadableStream<Uint8Array> {
	const iterator = run.pieces;
	let paused = false;
	return new ReadableStream<Uint8Array>(
		{
			start(controller) {
				for (const event of builder.start()) controller.enqueue(frame(event));
			},
			async pull(controller) {
				try {
					const result = await iterator.next();
					if (result.done) {
						run.settle(paused ? "paused" : "done");
						const last = builder.finish();
						saved(builder.snapshot());
						controller.enqueue(frame(last));
						return controller.close();
					}
					const piece = result.value;
					paused ||= piece.kind === "calls";
					if (piece.kind === "approval")
						controller.enqueue(encoder.encode(`: waiting for approval ${piece.id}: ${piece.url}\n\n`));
					for (const event of builder.add(piece)) controller.enqueue(frame(event));
				} catch (error) {
					run.settle("abandoned");
					const failed = builder.fail(error);
					saved(builder.snapshot());
					controller.enqueue(frame(failed));
					controller.close();
				}
			},
			cancel() {
				run.settle("abandoned");
				onCancel();
			},
		},
		{ highWaterMark: 0 },
	);
}

/** The whole response, once the run ended or paused at calls (`signal`: the client left or the wait ran out). */
export async function collect(builder: ResponseBuilder, run: ChatRun, signal: AbortSignal, timedOut: () => ApiError) {
	let paused = false;
	try {
		for await (const piece of run.pieces) {
			paused ||= piece.kind === "calls";
			builder.add(piece);
		}
	} catch (error) {
		run.settle("abandoned");
		if (signal.aborted) throw timedOut();
		throw error;
	}
	run.settle(paused ? "paused" : "done");
	builder.finish();
	return builder.snapshot();
}
