import { ApiError } from "../../transport/problem.ts";
import type { OpenAIChatToolCall } from "./chat.schemas.ts";
import type { ChatCompletion, ChatCompletionChunk } from "./chat-answer.schemas.ts";
import type { ChatRun } from "./chat-run.ts";
import { fromProblem } from "./openai.errors.ts";
import type { Piece } from "./run-follow.ts";

/** A comment frame while nothing else is said (a dialog waiting for a person), so proxies keep the stream. */
const heartbeatMs = 15_000;

const completionId = (run: ChatRun) => `chatcmpl-${run.sessionId}.${run.runId}`;
const now = () => Math.floor(Date.now() / 1000);

/** The whole answer, once the run ended or paused at tool calls (`signal`: the client left or the wait ran out). */
export async function completion(run: ChatRun, signal: AbortSignal): Promise<ChatCompletion> {
	let text = "";
	let calls: OpenAIChatToolCall[] | undefined;
	let finish: ChatCompletion["choices"][number]["finish_reason"] = "stop";
	try {
		for await (const piece of run.pieces) {
			if (piece.kind === "text") text += piece.delta;
			else if (piece.kind === "calls") {
				calls = piece.calls;
				finish = "tool_calls";
			} else if (piece.kind === "end") finish = piece.finish;
		}
	} catch (error) {
		run.settle("abandoned");
		if (signal.aborted) throw timedOut(run);
		throw error;
	}
	run.settle(calls ? "paused" : "done");
	return {
		id: completionId(run),
		object: "chat.completion",
		created: now(),
		model: run.model,
		choices: [
			{
				index: 0,
				message: {
					role: "assistant",
					content: text === "" && calls ? null : text,
					refusal: null,
					...(calls && { tool_calls: calls }),
				},
				logprobs: null,
				finish_reason: finish,
			},
		],
		usage: run.tally.usage(),
	};
}

export function timedOut(run: ChatRun): ApiError {
	return new ApiError(
		504,
		"run_timeout",
		`The run of session ${run.sessionId} did not end within the gateway's wait limit (--wait-timeout-ms) and was aborted. A run that may wait for an approval should be streamed (stream: true)`,
	);
}

/**
 * OpenAI's stream: a chunk per piece of text, the calls in one chunk, a last chunk with
 * `finish_reason`, the usage chunk when asked for, then `data: [DONE]`. A dialog that holds the run
 * is said in a comment line (`: waiting for approval …`), which OpenAI's clients skip. An error
 * after the first chunk is a `data: {"error": …}` frame, as OpenAI sends one. The client leaving
 * ends the run.
 */
export function chunkStream(run: ChatRun, includeUsage: boolean, onCancel: () => void): ReadableStream<Uint8Array> {
	const encoder = new TextEncoder();
	const base = { id: completionId(run), object: "chat.completion.chunk" as const, created: now(), model: run.model };
	const chunk = (delta: ChatCompletionChunk["choices"][number]["delta"], finish: string | null = null) =>
		data({
			...base,
			choices: [{ index: 0, delta, logprobs: null, finish_reason: finish as never }],
			...(includeUsage && { usage: null }),
		});
	const data = (value: unknown) => encoder.encode(`data: ${JSON.stringify(value)}\n\n`);
	const iterator = run.pieces;
	let next: Promise<IteratorResult<Piece>> | undefined;
	let paused = false;
	let done = false;
	return new ReadableStream<Uint8Array>(
		{
			start(controller) {
				controller.enqueue(chunk({ role: "assistant", content: "" }));
			},
			async pull(controller) {
				if (done) return;
				next ??= iterator.next();
				let timer: NodeJS.Timeout | undefined;
				const beat = new Promise<"beat">((resolve) => {
					timer = setTimeout(() => resolve("beat"), heartbeatMs);
				});
				try {
					const result = await Promise.race([next, beat]);
					if (result === "beat") return controller.enqueue(encoder.encode(": keep-alive\n\n"));
					next = undefined;
					if (result.done) return finish(controller);
					const piece: Piece = result.value;
					if (piece.kind === "text") controller.enqueue(chunk({ content: piece.delta }));
					else if (piece.kind === "approval")
						controller.enqueue(
							encoder.encode(`: waiting for approval ${piece.id} (${oneLine(piece.title)}): ${piece.url}\n\n`),
						);
					else if (piece.kind === "calls") {
						paused = true;
						const tool_calls = piece.calls.map((call, index) => ({ index, ...call }));
						controller.enqueue(chunk({ tool_calls }));
						controller.enqueue(chunk({}, "tool_calls"));
					} else controller.enqueue(chunk({}, piece.finish));
				} catch (error) {
					done = true;
					run.settle("abandoned");
					const problem = error instanceof ApiError ? error : new ApiError(500, "internal_error", "The run failed");
					controller.enqueue(
						data(fromProblem(problem.status, { ...problem.extra, code: problem.code, detail: problem.message })),
					);
					controller.close();
				} finally {
					clearTimeout(timer);
				}
			},
			cancel() {
				done = true;
				run.settle("abandoned");
				onCancel();
			},
		},
		{ highWaterMark: 0 },
	);

	function finish(controller: ReadableStreamDefaultController<Uint8Array>) {
		done = true;
		run.settle(paused ? "paused" : "done");
		if (includeUsage) controller.enqueue(data({ ...base, choices: [], usage: run.tally.usage() }));
		controller.enqueue(encoder.encode("data: [DONE]\n\n"));
		controller.close();
	}
}

const oneLine = (text: string) => text.replace(/[\r\n]+/g, " ").slice(0, 200);
