import type { Context } from "hono";
import type { PiGateway } from "../../../client/index.ts";
import type { AppEnv } from "../../transport/openapi.ts";
import { inner } from "./caller.ts";
import { timedOut } from "./chat-answer.ts";
import type { ChatSessions } from "./chat-run.ts";
import type { OpenAIResponse, ResponseCreateRequest } from "./responses.schemas.ts";
import { collect, ResponseBuilder, responseStream } from "./responses-answer.ts";
import { newResponseId, planResponse, responseNotFound, sessionOfResponse } from "./responses-input.ts";

/** Responses kept for GET: this process's last ones, in memory (a restart forgets them, the sessions stay). */
const kept = 1000;

export class Responses {
	readonly #saved = new Map<string, OpenAIResponse>();

	save(response: OpenAIResponse): void {
		this.#saved.delete(response.id);
		this.#saved.set(response.id, response);
		while (this.#saved.size > kept) this.#saved.delete(this.#saved.keys().next().value as string);
	}

	/** A response the key may read: its session must be one the key sees (an inner GET, with its checks). */
	async get(gw: PiGateway, id: string): Promise<OpenAIResponse> {
		const session = sessionOfResponse(id);
		const response = this.#saved.get(id);
		if (!session || !response) throw responseNotFound();
		await inner(gw.getSession(session)).catch((error) => {
			throw error?.status === 404 || error?.status === 410 ? responseNotFound() : error;
		});
		return response;
	}

	async create(
		c: Context<AppEnv>,
		gw: PiGateway,
		chats: ChatSessions,
		body: ResponseCreateRequest,
		model: { provider?: string; model: string },
		waitMs: number,
	): Promise<Response> {
		const plan = planResponse(body);
		Object.assign(plan.create, model);
		const ended = new AbortController();
		const clientLeft = () => ended.abort();
		c.req.raw.signal.addEventListener("abort", clientLeft, { once: true });
		const run = await chats.start(gw, plan, ended.signal);
		const builder = new ResponseBuilder(newResponseId(run.sessionId), run, body);
		this.save(builder.snapshot());
		const headers = { "X-Pi-Gateway-Session": run.sessionId };
		if (body.stream) {
			const stream = responseStream(builder, run, (r) => this.save(r), clientLeft);
			const sse = { "Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no" };
			return new Response(stream, { status: 200, headers: { ...headers, ...sse } });
		}
		const deadline = setTimeout(() => ended.abort(), waitMs);
		try {
			const response = await collect(builder, run, ended.signal, () => timedOut(run));
			this.save(response);
			return c.json(response, 200, headers);
		} finally {
			clearTimeout(deadline);
			c.req.raw.signal.removeEventListener("abort", clientLeft);
		}
	}
}
