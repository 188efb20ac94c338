/**
 * Client tools: the calls a session's model makes to tools this program runs (declared with
 * `clientTools` at create). `run()` is the handler-style helper: it sends a prompt in wait mode,
 * answers every call of the session meanwhile by running the matching function, and resolves
 * with the run's result. The rest are the routes one by one.
 */
import { GatewayError } from "./errors.ts";
import type { Transport } from "./http.ts";
import type { Schemas } from "./types.ts";

export type ToolCall = Schemas["ToolCall"];
export type ToolCallAnswer = Schemas["ToolCallAnswer"];
export type ToolCallStatus = Schemas["ToolCallStatus"];

/** What a handler returns: the output (text or content blocks), or a whole answer (to set `isError`). */
export type ToolOutput = string | ToolCallAnswer;
/** A client tool's implementation: the model's arguments in, the tool's output out (a throw is an error result). */
// biome-ignore lint/suspicious/noExplicitAny: the arguments are whatever the tool's JSON Schema says
export type ToolHandler = (args: any, call: ToolCall) => ToolOutput | Promise<ToolOutput>;

export interface ListToolCallsOptions {
	status?: ToolCallStatus;
	/** Seconds to hold an empty list (long-poll, 0–300). */
	wait?: number;
	signal?: AbortSignal;
}

export interface RunWithToolsOptions {
	/** Seconds the run may take (wait mode's `Prefer: wait=N`; default: the gateway's limit). */
	seconds?: number;
	/** Seconds each long-poll for calls is held (default 30). */
	pollSeconds?: number;
	signal?: AbortSignal;
}

export class ToolCalls {
	readonly #transport: Transport;

	constructor(transport: Transport) {
		this.#transport = transport;
	}

	/** A session's calls, oldest first (`wait` long-polls while the list would be empty). */
	async list(sessionId: string, options: ListToolCallsOptions = {}): Promise<ToolCall[]> {
		const page = await this.#transport.json<Schemas["ToolCallList"]>("GET", "/v1/sessions/{id}/tool-calls", {
			path: { id: sessionId },
			query: { status: options.status, wait: options.wait },
			signal: options.signal,
		});
		return page.toolCalls;
	}

	/** Calls across every session the credential may read (the inbox of a program serving many). */
	async inbox(options: ListToolCallsOptions = {}): Promise<ToolCall[]> {
		const page = await this.#transport.json<Schemas["ToolCallList"]>("GET", "/v1/tool-calls", {
			query: { status: options.status, wait: options.wait },
			signal: options.signal,
		});
		return page.toolCalls;
	}

	get(sessionId: string, callId: string, signal?: AbortSignal): Promise<ToolCall> {
		return this.#transport.json<ToolCall>("GET", "/v1/sessions/{id}/tool-calls/{callId}", {
			path: { id: sessionId, callId },
			signal,
		});
	}

	/** The tool's result for the model (409 already answered, 410 the run no longer waits, 422 a wrong shape). */
	answer(call: Pick<ToolCall, "id" | "sessionId">, answer: ToolCallAnswer, signal?: AbortSignal): Promise<ToolCall> {
		return this.#transport.json<ToolCall>("POST", "/v1/sessions/{id}/tool-calls/{callId}", {
			path: { id: call.sessionId, callId: call.id },
			body: answer,
			signal,
		});
	}

	/** Runs the handler for one call and answers it; a missing handler or a throw is an error result. */
	async handle(call: ToolCall, tools: Record<string, ToolHandler>, signal?: AbortSignal): Promise<ToolCall> {
		let answer: ToolCallAnswer;
		const handler = Object.hasOwn(tools, call.name) ? tools[call.name] : undefined;
		try {
			if (!handler) throw new Error(`This program has no handler for the tool ${call.name}`);
			const output = await handler(call.arguments, call);
			answer = typeof output === "string" ? { output } : output;
		} catch (error) {
			answer = { output: error instanceof Error ? error.message : String(error), isError: true };
		}
		return this.answer(call, answer, signal);
	}

	/**
	 * Sends a prompt and answers the session's tool calls by name until the run ends: resolves with
	 * the run's result (RunResult), or RunAccepted when `seconds` ran out first.
	 */
	async run(
		sessionId: string,
		body: Schemas["PromptBody"],
		tools: Record<string, ToolHandler>,
		options: RunWithToolsOptions = {},
	): Promise<Schemas["RunResult"] | Schemas["RunAccepted"]> {
		const stop = new AbortController();
		const signal = options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal;
		const answering = this.#answerUntil(sessionId, tools, options.pollSeconds ?? 30, signal);
		try {
			const prefer = options.seconds === undefined ? "wait" : `wait=${options.seconds}`;
			return await this.#transport.json<Schemas["RunResult"] | Schemas["RunAccepted"]>(
				"POST",
				"/v1/sessions/{id}/prompt",
				{ path: { id: sessionId }, body, headers: { prefer }, signal: options.signal },
			);
		} finally {
			stop.abort();
			await answering;
		}
	}

	async #answerUntil(
		sessionId: string,
		tools: Record<string, ToolHandler>,
		pollSeconds: number,
		signal: AbortSignal,
	): Promise<void> {
		while (!signal.aborted) {
			try {
				const pending = await this.list(sessionId, { status: "pending", wait: pollSeconds, signal });
				for (const call of pending) await this.handle(call, tools, signal).catch(ignoreSettled);
			} catch (error) {
				if (signal.aborted) return;
				throw error;
			}
		}
	}
}

/** Another answer won, or the run stopped waiting (an abort): nothing left to do for that call. */
function ignoreSettled(error: unknown): void {
	if (error instanceof GatewayError && (error.status === 409 || error.status === 410)) return;
	throw error;
}
