import { createRouter } from "../../transport/openapi.ts";
import type { Deps } from "../deps.ts";
import { type AppFetch, callerGateway, inner } from "./caller.ts";
import { chunkStream, completion, timedOut } from "./chat-answer.ts";
import { planChat } from "./chat-input.ts";
import { ChatSessions } from "./chat-run.ts";
import { ModelCatalog, modelNotFound, resolveModel } from "./models.ts";
import {
	cancelResponse,
	createChatCompletion,
	createResponse,
	deleteResponse,
	getModel,
	getResponse,
	listModels,
} from "./openai.routes.ts";
import { Responses } from "./responses.handlers.ts";

export { openaiErrorShape } from "./openai.errors.ts";

/**
 * OpenAI's protocol (docs/openai.md): each operation is translated to the gateway's own REST API,
 * called in-process with the caller's Authorization (callerGateway), so every check of that API
 * holds and every completion is an ordinary session run. `appFetch` is the app itself.
 */
export function openaiRouter({ config, registry }: Deps, appFetch: AppFetch) {
	const catalog = new ModelCatalog(config);
	// Only ever a session this router started or went on in for a caller (chat-run.ts).
	const chats = new ChatSessions(async (id) => void (await registry.get(id).request({ type: "abort" })));
	const responses = new Responses();
	return createRouter()
		.openapi(listModels, async (c) => {
			const data = await inner(catalog.list(callerGateway(c, appFetch)));
			return c.json({ object: "list" as const, data }, 200);
		})
		.openapi(getModel, async (c) => {
			const { model } = c.req.valid("param");
			const found = (await inner(catalog.list(callerGateway(c, appFetch)))).find((m) => m.id === model);
			if (!found) throw modelNotFound(model, "not one of GET /v1/models");
			return c.json(found, 200);
		})
		.openapi(createChatCompletion, async (c) => {
			const body = c.req.valid("json");
			const gw = callerGateway(c, appFetch);
			const plan = planChat(body);
			Object.assign(plan.create, await resolveModel(catalog, gw, body.model));
			// The run lives as long as the request: the client leaving, or the wait limit, ends it.
			const ended = new AbortController();
			const clientLeft = () => ended.abort();
			c.req.raw.signal.addEventListener("abort", clientLeft, { once: true });
			const run = await chats.start(gw, plan, ended.signal);
			const headers = { "X-Pi-Gateway-Session": run.sessionId };
			if (body.stream) {
				const stream = chunkStream(run, body.stream_options?.include_usage === true, clientLeft);
				return new Response(stream, {
					status: 200,
					headers: {
						...headers,
						"Content-Type": "text/event-stream",
						"Cache-Control": "no-cache",
						"X-Accel-Buffering": "no",
					},
				}) as never;
			}
			const deadline = setTimeout(() => ended.abort(timedOut(run)), config.waitTimeoutMs);
			try {
				return c.json(await completion(run, ended.signal), 200, headers);
			} finally {
				clearTimeout(deadline);
				c.req.raw.signal.removeEventListener("abort", clientLeft);
			}
		})
		.openapi(createResponse, async (c) => {
			const body = c.req.valid("json");
			const gw = callerGateway(c, appFetch);
			const model = await resolveModel(catalog, gw, body.model);
			return (await responses.create(c, gw, chats, body, model, config.waitTimeoutMs)) as never;
		})
		.openapi(getResponse, async (c) => {
			const response = await responses.get(c, callerGateway(c, appFetch), c.req.valid("param").response_id);
			return c.json(response, 200);
		})
		.openapi(cancelResponse, async (c) => {
			const response = await responses.cancel(c, callerGateway(c, appFetch), c.req.valid("param").response_id);
			return c.json(response, 200);
		})
		.openapi(deleteResponse, async (c) => c.json(await responses.delete(c, c.req.valid("param").response_id), 200));
}
