import type { Context } from "hono";
import type { PiGateway } from "../../../client/index.ts";
import type { AppEnv } from "../../transport/openapi.ts";
import { ApiError } from "../../transport/problem.ts";
import { inner } from "./caller.ts";
import { timedOut } from "./chat-answer.ts";
import type { ChatRun, ChatSessions } from "./chat-run.ts";
import type { OpenAIResponse, ResponseCreateRequest } from "./responses.schemas.ts";
import { ResponseStore } from "./responses.store.ts";
import { collect, ResponseBuilder, responseStream } from "./responses-answer.ts";
import { newResponseId, planResponse, responseNotFound, sessionOfResponse } from "./responses-input.ts";

const principalOf = (c: Context<AppEnv>) => c.get("principal")?.name ?? "";

/**
 * OpenAI's Responses over the gateway's sessions: a response is a run (chats.start), kept for its
 * principal in `store`; `background` runs on after the request returns, until it ends or is cancelled.
 */
export class Responses {
	readonly #store = new ResponseStore();

	/** A response the key may read: its own, and its session still one the key sees (an inner GET, with its checks). */
	async get(c: Context<AppEnv>, gw: PiGateway, id: string): Promise<OpenAIResponse> {
		const session = sessionOfResponse(id);
		const entry = this.#store.get(principalOf(c), id);
		if (!session || !entry) throw responseNotFound();
		await inner(gw.getSession(session)).catch((error) => {
			throw error?.status === 404 || error?.status === 410 ? responseNotFound() : error;
		});
		return entry.response;
	}

	/** Cancels a background response's run; a response that already ended is answered as it is. */
	async cancel(c: Context<AppEnv>, gw: PiGateway, id: string): Promise<OpenAIResponse> {
		const entry = this.#store.get(principalOf(c), id);
		if (!entry) throw responseNotFound();
		if (!entry.response.background)
			throw new ApiError(400, "not_background", "Only a response created with `background: true` can be cancelled");
		const running = entry.background;
		if (running) {
			running.cancel();
			await running.ended;
		}
		return this.get(c, gw, id);
	}

	/** Forgets a response (cancelling its run first when it still goes); its session stays. */
	async delete(c: Context<AppEnv>, id: string): Promise<{ id: string; object: "response"; deleted: true }> {
		const entry = this.#store.get(principalOf(c), id);
		if (!entry) throw responseNotFound();
		if (entry.background) {
			entry.background.cancel();
			await entry.background.ended;
		}
		this.#store.delete(principalOf(c), id);
		return { id, object: "response", deleted: true };
	}

	async create(
		c: Context<AppEnv>,
		gw: PiGateway,
		chats: ChatSessions,
		body: ResponseCreateRequest,
		model: { provider?: string; model: string },
		waitMs: number,
	): Promise<Response> {
		const principal = principalOf(c);
		const plan = planResponse(body);
		Object.assign(plan.create, model);
		const ended = new AbortController();
		const clientLeft = () => ended.abort();
		if (!body.background) c.req.raw.signal.addEventListener("abort", clientLeft, { once: true });
		const run = await chats.start(gw, plan, ended.signal);
		const builder = new ResponseBuilder(newResponseId(run.sessionId), run, body);
		const headers = { "X-Pi-Gateway-Session": run.sessionId };
		if (body.background) {
			this.#store.save(principal, builder.snapshot(), this.#runInBackground(principal, builder, run, ended));
			return c.json(builder.snapshot(), 200, headers);
		}
		this.#store.save(principal, builder.snapshot());
		const save = (response: OpenAIResponse) => this.#store.update(principal, response);
		if (body.stream) {
			const stream = responseStream(builder, run, save, clientLeft);
			const sse = { "Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no" };
			return new Response(stream, { status: 200, headers: { ...headers, ...sse } });
		}
		const deadline = setTimeout(() => ended.abort(), waitMs);
		try {
			const response = await collect(builder, run, ended.signal, () => timedOut(run));
			save(response);
			return c.json(response, 200, headers);
		} finally {
			clearTimeout(deadline);
			c.req.raw.signal.removeEventListener("abort", clientLeft);
		}
	}

	/** The run of a background response, going on after the request: its end (or its cancel) is saved. */
	#runInBackground(principal: string, builder: ResponseBuilder, run: ChatRun, abort: AbortController) {
		const cancelled = new ApiError(409, "response_cancelled", "The response was cancelled");
		const ended = collect(builder, run, abort.signal, () => cancelled)
			.catch((error) => (abort.signal.aborted ? builder.cancelled() : builder.fail(error)))
			.then(() => {
				this.#store.update(principal, builder.snapshot());
				this.#store.ended(principal, builder.id);
			});
		return { cancel: () => abort.abort(), ended };
	}
}
