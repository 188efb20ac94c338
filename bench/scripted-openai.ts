/**
 * A scripted OpenAI-compatible model for the peer benchmark (bench/peers.ts): one server on
 * 127.0.0.1 that pi (a models.json provider), opencode (an @ai-sdk/openai-compatible provider) and
 * sandbox-agent (through pi-acp and the same pi) all call, so the three agent servers stream the
 * same answer from the same source and nothing leaves the machine.
 *
 * POST /v1/chat/completions answers `tokens: N` in the last user message with N one-word tokens
 * ("w1 w2 … wN", one SSE chunk each), anything else with `defaultTokens` (so a title or summary
 * request a peer makes on the side stays short and is counted apart: see `requests`). Streaming
 * (`stream: true`) is chat.completion.chunk frames then `data: [DONE]`; otherwise one
 * chat.completion. GET /v1/models lists the one model. The prompt text is only matched against a
 * fixed pattern, never used as one.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export const scriptedModelId = "scripted";

export interface ScriptedModel {
	/** Base URL with the /v1 suffix, as OpenAI-compatible clients take it. */
	baseUrl: string;
	/** Chat completion requests served so far, by how many tokens they were answered with (`at`: hrtime they came). */
	requests: { tokens: number; stream: boolean; at: bigint }[];
	close(): Promise<void>;
}

/** The word a token is: numbered, so a client can check that every token arrived in order. */
export const tokenText = (i: number) => `w${i} `;

/** The text an answer of `n` tokens adds up to. */
export function answerText(n: number): string {
	let text = "";
	for (let i = 1; i <= n; i++) text += tokenText(i);
	return text;
}

function lastUserText(body: any): string {
	const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
	for (let i = messages.length - 1; i >= 0; i--) {
		const m = messages[i];
		if (m?.role !== "user") continue;
		if (typeof m.content === "string") return m.content;
		if (Array.isArray(m.content))
			return m.content.map((part: any) => (typeof part?.text === "string" ? part.text : "")).join("");
		return "";
	}
	return "";
}

/** How many tokens a request is answered with: `tokens: N` (N ≤ 1,000,000) or the default. */
export function tokensFor(body: unknown, defaultTokens: number): number {
	const match = /tokens:\s*(\d{1,7})\b/.exec(lastUserText(body));
	return match ? Math.min(Number(match[1]), 1_000_000) : defaultTokens;
}

function chunk(id: string, created: number, delta: object, finish: string | null, usage?: object): string {
	return `data: ${JSON.stringify({
		id,
		object: "chat.completion.chunk",
		created,
		model: scriptedModelId,
		choices: [{ index: 0, delta, finish_reason: finish }],
		...(usage ? { usage } : {}),
	})}\n\n`;
}

/** Writes the answer as fast as the client reads it, pausing on backpressure only. */
async function stream(res: ServerResponse, tokens: number, id: string): Promise<void> {
	const created = Math.floor(Date.now() / 1000);
	res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
	res.write(chunk(id, created, { role: "assistant", content: "" }, null));
	for (let i = 1; i <= tokens; i++) {
		if (!res.write(chunk(id, created, { content: tokenText(i) }, null)))
			await new Promise((resolve) => res.once("drain", resolve));
		if (res.destroyed) return;
	}
	const usage = { prompt_tokens: 10, completion_tokens: tokens, total_tokens: tokens + 10 };
	res.write(chunk(id, created, {}, "stop", usage));
	res.end("data: [DONE]\n\n");
}

async function readBody(req: IncomingMessage): Promise<unknown> {
	const parts: Buffer[] = [];
	for await (const part of req) parts.push(part as Buffer);
	try {
		return JSON.parse(Buffer.concat(parts).toString("utf8"));
	} catch {
		return undefined;
	}
}

export async function startScriptedModel(defaultTokens = 8): Promise<ScriptedModel> {
	const requests: ScriptedModel["requests"] = [];
	let next = 0;
	const server = createServer(async (req, res) => {
		const arrived = process.hrtime.bigint();
		const path = (req.url ?? "").split("?")[0];
		if (req.method === "GET" && path === "/v1/models") {
			res.writeHead(200, { "content-type": "application/json" });
			res.end(JSON.stringify({ object: "list", data: [{ id: scriptedModelId, object: "model", owned_by: "bench" }] }));
			return;
		}
		if (req.method !== "POST" || path !== "/v1/chat/completions") {
			res.writeHead(404, { "content-type": "application/json" });
			res.end(JSON.stringify({ error: { message: "not found" } }));
			return;
		}
		const body: any = await readBody(req);
		if (!body) {
			res.writeHead(400, { "content-type": "application/json" });
			res.end(JSON.stringify({ error: { message: "body is not JSON" } }));
			return;
		}
		const tokens = tokensFor(body, defaultTokens);
		const streaming = body.stream === true;
		requests.push({ tokens, stream: streaming, at: arrived });
		const id = `chatcmpl-${++next}`;
		if (streaming) return stream(res, tokens, id);
		res.writeHead(200, { "content-type": "application/json" });
		res.end(
			JSON.stringify({
				id,
				object: "chat.completion",
				created: Math.floor(Date.now() / 1000),
				model: scriptedModelId,
				choices: [{ index: 0, message: { role: "assistant", content: answerText(tokens) }, finish_reason: "stop" }],
				usage: { prompt_tokens: 10, completion_tokens: tokens, total_tokens: tokens + 10 },
			}),
		);
	});
	server.keepAliveTimeout = 60_000;
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	const { port } = server.address() as AddressInfo;
	return {
		baseUrl: `http://127.0.0.1:${port}/v1`,
		requests,
		close: () =>
			new Promise((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}

if (import.meta.url === `file://${process.argv[1]}`) {
	const model = await startScriptedModel();
	console.log(model.baseUrl);
}
