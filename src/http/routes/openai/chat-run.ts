import { GatewayError as ClientError, type PiGateway, type StreamEvent } from "../../../client/index.ts";
import { ApiError } from "../../transport/problem.ts";
import { inner } from "./caller.ts";
import type { ChatPlan } from "./chat-input.ts";
import { follow, type Piece, RunTally } from "./run-follow.ts";

/** A `previous_response_id` or `conversation` whose session the key cannot see (another principal's, or gone). */
function previousNotFound(error: unknown, by: ChatPlan["continueBy"]): unknown {
	if (!(error instanceof ApiError) || (error.status !== 404 && error.status !== 410)) return error;
	if (by === "conversation")
		return new ApiError(404, "conversation_not_found", "No such conversation (session) for this key", {
			param: "conversation",
		} as never);
	return new ApiError(404, "previous_response_not_found", "No such previous response for this key", {
		param: "previous_response_id",
	} as never);
}

/** How long a session whose run waits for the client's tool results is kept for the next request. */
export const toolPauseMs = 10 * 60_000;

/** One completion's run: its pieces as they come, and what to do with its session after. */
export interface ChatRun {
	sessionId: string;
	runId: string;
	/** The session's model, `provider/id`. */
	model: string;
	pieces: AsyncGenerator<Piece>;
	tally: RunTally;
	/** `done`: answered; `paused`: at tool calls; `abandoned`: the client left, the wait ran out, or it failed. */
	settle(outcome: "done" | "paused" | "abandoned"): void;
}

// How the gateway's own fields are named in OpenAI's request, for an inner 400's `param`.
const createFields = {
	clientTools: "tools",
	appendSystemPrompt: "messages",
	provider: "model",
	model: "model",
	thinkingLevel: "reasoning_effort",
	extensions: "pi.extensions",
	cwd: "pi.cwd",
};
const promptFields = { message: "messages", images: "messages", outputSchema: "response_format" };

/**
 * Sessions of completions: each is deleted once its answer is complete (kept with `store: true`),
 * aborted and deleted when the client leaves first, and kept `toolPauseMs` for the request that
 * brings its tool results. One per router, so a pause's timer is cleared by the request that resumes it.
 */
export class ChatSessions {
	readonly #paused = new Map<string, NodeJS.Timeout>();
	readonly #stop: (sessionId: string) => Promise<void>;

	/**
	 * `stop`: the gateway's own abort of a run it follows for a caller, for when the caller's abort is
	 * refused 401 (its key was revoked mid-run: its streams end at once, and the run it can no longer
	 * follow or cancel must not go on unseen, a background response's included).
	 */
	constructor(stop: (sessionId: string) => Promise<void> = async () => {}) {
		this.#stop = stop;
	}

	/** Stops this run only (run cancel by id); the whole session's abort only when the run's id is unknown. */
	#abort(gw: PiGateway, sessionId: string, runId = ""): Promise<void> {
		const stop = runId ? gw.cancelRun(sessionId, runId).then(() => {}) : gw.abort(sessionId).then(() => {});
		return stop.catch(async (error) => {
			if (error instanceof ClientError && error.status === 401) await this.#stop(sessionId).catch(() => {});
		});
	}

	async start(gw: PiGateway, plan: ChatPlan, signal: AbortSignal): Promise<ChatRun> {
		if (plan.resume) {
			const resumed = await this.#resume(gw, plan, signal);
			if (resumed) return resumed;
		}
		const session = plan.continueIn
			? await inner(gw.getSession(plan.continueIn, { signal })).catch((error) => {
					throw previousNotFound(error, plan.continueBy);
				})
			: await inner(gw.createSession(plan.create), createFields);
		const events = gw.promptStream(session.id, plan.prompt, { signal })[Symbol.asyncIterator]();
		const opened = await inner(events.next(), promptFields).catch(async (error) => {
			if (!plan.continueIn) await this.#delete(gw, session.id);
			throw error;
		});
		const runId = String((opened.value as { runId?: string } | undefined)?.runId ?? "");
		const model = session.model ? `${session.model.provider}/${session.model.id}` : String(plan.create.model);
		return this.#run(gw, plan, session.id, runId, model, events, new Map());
	}

	/** The run that waits for these tool results, or undefined when it no longer does (then a new session). */
	async #resume(gw: PiGateway, plan: ChatPlan, signal: AbortSignal): Promise<ChatRun | undefined> {
		const { sessionId, results } = plan.resume as NonNullable<ChatPlan["resume"]>;
		let session: Awaited<ReturnType<PiGateway["getSession"]>>;
		try {
			session = await gw.getSession(sessionId, { signal });
		} catch (error) {
			// Not the caller's (404), or gone: the conversation goes on in a new session, as text.
			if (error instanceof ClientError && (error.status === 404 || error.status === 410)) return undefined;
			throw error;
		}
		// Subscribed first, so that no call requested while the waiting ones are answered is missed.
		const events = gw.events(sessionId, { signal })[Symbol.asyncIterator]();
		await inner(events.next());
		const waiting = (await inner(gw.toolCalls.list(sessionId, { status: "pending", signal }))).filter((call) =>
			results.has(call.id),
		);
		if (waiting.length === 0) {
			await events.return?.(undefined);
			return undefined;
		}
		const left = new Map(results);
		for (const call of waiting) {
			left.delete(call.id);
			await inner(gw.toolCalls.answer(call, { output: results.get(call.id) as string }, signal)).catch(
				async (error) => {
					await events.return?.(undefined);
					throw error;
				},
			);
		}
		// Only now: a caller who may read the session but not answer it (a read share) ends no pause.
		this.#unpause(sessionId);
		const model = session.model ? `${session.model.provider}/${session.model.id}` : String(plan.create.model);
		return this.#run(gw, plan, sessionId, waiting[0]?.runId ?? "", model, events, left);
	}

	#run(
		gw: PiGateway,
		plan: ChatPlan,
		sessionId: string,
		runId: string,
		model: string,
		events: AsyncIterator<StreamEvent>,
		results: Map<string, string>,
	): ChatRun {
		const tally = new RunTally();
		const iterable = { [Symbol.asyncIterator]: () => events };
		const pieces = follow(
			iterable,
			{
				sessionId,
				toolNames: plan.toolNames,
				maxTokens: plan.maxTokens,
				structured: plan.prompt.outputSchema !== undefined,
				results,
				answer: (callId, output) => inner(gw.toolCalls.answer({ id: callId, sessionId }, { output })).then(() => {}),
				abort: () => this.#abort(gw, sessionId, runId),
			},
			tally,
		);
		let settled = false;
		const settle = (outcome: "done" | "paused" | "abandoned") => {
			if (settled) return;
			settled = true;
			void events.return?.(undefined);
			if (outcome === "paused") this.#pause(gw, sessionId, plan.store);
			else if (outcome === "abandoned")
				void this.#abort(gw, sessionId, runId).then(() => (plan.store ? undefined : this.#delete(gw, sessionId)));
			else if (!plan.store) void this.#delete(gw, sessionId);
		};
		return { sessionId, runId, model, pieces, tally, settle };
	}

	#pause(gw: PiGateway, sessionId: string, store: boolean): void {
		this.#unpause(sessionId);
		const timer = setTimeout(() => {
			this.#paused.delete(sessionId);
			void this.#abort(gw, sessionId).then(() => (store ? undefined : this.#delete(gw, sessionId)));
		}, toolPauseMs);
		timer.unref();
		this.#paused.set(sessionId, timer);
	}

	#unpause(sessionId: string): void {
		clearTimeout(this.#paused.get(sessionId));
		this.#paused.delete(sessionId);
	}

	#delete(gw: PiGateway, id: string): Promise<void> {
		return gw
			.request("DELETE", "/v1/sessions/{id}", { path: { id }, query: { purge: "true" } })
			.then(() => {})
			.catch(() => {});
	}
}
