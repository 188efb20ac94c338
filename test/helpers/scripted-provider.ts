/**
 * A scripted OpenAI-compatible provider on 127.0.0.1 for the relay's tests: every request's
 * headers and path are kept (what reached the provider: keys included), and each answer is scripted
 * by the last user message. `bash: CMD` answers with a call of pi's bash tool running CMD (once:
 * after the tool's result it answers `done: <result>`), anything else with `echo: <text>`. Streamed
 * (SSE with a final usage chunk) or not, as asked; usage is 10 prompt tokens + 5 completion tokens.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface ScriptedProvider {
	/** Base URL with /v1, as OpenAI-compatible clients take it. */
	baseUrl: string;
	port: number;
	requests: { path: string; headers: IncomingHttpHeaders; body: any }[];
	close(): Promise<void>;
}

export const scriptedUsage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };

function textOf(content: unknown): string {
	if (typeof content === "string") return content;
	if (Array.isArray(content)) return content.map((p: any) => (typeof p?.text === "string" ? p.text : "")).join("");
	return "";
}

function answerFor(body: any): { text?: string; bash?: string } {
	const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
	const last = messages[messages.length - 1];
	if (last?.role === "tool") return { text: `done: ${textOf(last.content).trim()}` };
	const user = [...messages].reverse().find((m) => m?.role === "user");
	const text = textOf(user?.content);
	if (text.startsWith("bash: ")) return { bash: text.slice(6) };
	return { text: `echo: ${text}` };
}

/** A test's own answer to a request (its parsed body given), before the script's: true when it answered. */
export type ScriptedOverride = (body: any, req: IncomingMessage, res: ServerResponse) => boolean;

export async function startScriptedProvider(override?: ScriptedOverride): Promise<ScriptedProvider> {
	const requests: ScriptedProvider["requests"] = [];
	let next = 0;
	const server = createServer(async (req, res) => {
		const parts: Buffer[] = [];
		for await (const part of req) parts.push(part as Buffer);
		let body: any;
		try {
			body = JSON.parse(Buffer.concat(parts).toString("utf8"));
		} catch {}
		requests.push({ path: req.url ?? "", headers: req.headers, body });
		if (override?.(body, req, res)) return;
		if (req.method !== "POST" || !(req.url ?? "").startsWith("/v1/chat/completions")) {
			res.writeHead(404, { "content-type": "application/json" });
			res.end(JSON.stringify({ error: { message: "not found" } }));
			return;
		}
		const id = `chatcmpl-${++next}`;
		const created = Math.floor(Date.now() / 1000);
		const answer = answerFor(body);
		const call = answer.bash
			? [
					{
						index: 0,
						id: `call_${next}`,
						type: "function",
						function: { name: "bash", arguments: JSON.stringify({ command: answer.bash }) },
					},
				]
			: undefined;
		const finish = call ? "tool_calls" : "stop";
		const model = typeof body?.model === "string" ? body.model : "m";
		if (body?.stream !== true) {
			res.writeHead(200, { "content-type": "application/json" });
			const message = { role: "assistant", content: answer.text ?? null, ...(call ? { tool_calls: call } : {}) };
			res.end(
				JSON.stringify({
					id,
					object: "chat.completion",
					created,
					model,
					choices: [{ index: 0, message, finish_reason: finish }],
					usage: scriptedUsage,
				}),
			);
			return;
		}
		res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
		const chunk = (delta: object, finishReason: string | null, usage?: object) =>
			`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, finish_reason: finishReason }], ...(usage ? { usage } : {}) })}\n\n`;
		res.write(chunk({ role: "assistant", content: "" }, null));
		res.write(chunk(call ? { tool_calls: call } : { content: answer.text }, null));
		res.write(chunk({}, finish));
		res.write(
			`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [], usage: scriptedUsage })}\n\n`,
		);
		res.end("data: [DONE]\n\n");
	});
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	const { port } = server.address() as AddressInfo;
	return {
		baseUrl: `http://127.0.0.1:${port}/v1`,
		port,
		requests,
		close: () =>
			new Promise((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}
