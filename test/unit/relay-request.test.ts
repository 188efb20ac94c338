import { mkdtempSync, rmSync } from "node:fs";
import {
	createServer,
	type IncomingHttpHeaders,
	type IncomingMessage,
	request,
	type Server,
	type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ModelCost, RelayRoute } from "../../src/sessions/relay/credentials.ts";
import { requestLimits } from "../../src/sessions/relay/request-body.ts";
import { closeRelay, openRelay } from "../../src/sessions/relay/server.ts";
import { until } from "../helpers/gateway.ts";

// What an attacker's review from inside the sandbox made of a call's request (issue 42): the price
// came from the first "model" anywhere in the body (a nested decoy priced o3-pro 240× lower, a
// Gemini call $0), Gemini's usage was never read, `background: true` ran a responses call after it
// had ended (billed unseen), and a chat stream without include_usage hid a reasoning model's
// tokens. A relay on a unix socket, a provider on 127.0.0.1 each test scripts, and a sink.

const prices = (input: number, output: number): ModelCost => ({ input, output, cacheRead: 0, cacheWrite: 0 });
const openaiUsage = { prompt_tokens: 100, completion_tokens: 50, total_tokens: 150 };

let root: string;
let socket: string;
let upstream: Server;
let counted: [number, number][] = [];
/** What reached the provider: each request's path, headers and body. */
let seen: { path: string; headers: IncomingHttpHeaders; body: string }[] = [];
/** The provider's answer to each request. */
let answer: (req: IncomingMessage, body: any, res: ServerResponse) => void;

const json = (res: ServerResponse, value: unknown) => {
	res.writeHead(200, { "content-type": "application/json" });
	res.end(JSON.stringify(value));
};
const chatAnswer = (model?: string) => (_req: IncomingMessage, _body: any, res: ServerResponse) =>
	json(res, { id: "c", object: "chat.completion", ...(model ? { model } : {}), choices: [], usage: openaiUsage });

beforeAll(async () => {
	root = mkdtempSync(join(tmpdir(), "relay-request-"));
	socket = join(root, "relay.sock");
	upstream = createServer(async (req, res) => {
		const parts: Buffer[] = [];
		for await (const part of req) parts.push(part as Buffer);
		const text = Buffer.concat(parts).toString("utf8");
		seen.push({ path: req.url ?? "", headers: req.headers, body: text });
		answer(req, text ? JSON.parse(text) : undefined, res);
	});
	await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
	const { port } = upstream.address() as AddressInfo;
	const route = (provider: string, apis: string[], costs: [string, ModelCost][]): RelayRoute => ({
		provider,
		upstream: `http://127.0.0.1:${port}/v1`,
		secrets: new Map(),
		costs: new Map(costs),
		keyHeaders: new Set(["authorization"]),
		apis: new Set(apis),
		queryKey: false,
	});
	const openai = route(
		"o",
		["openai-completions", "openai-responses"],
		[
			["nano", prices(0.05, 0.4)],
			["pro", prices(20, 80)],
			["mid", prices(1, 2)],
		],
	);
	const google = route(
		"g",
		["google-generative-ai"],
		[
			["gemini-pro", prices(1.25, 10)],
			["gemma", prices(0, 0)],
		],
	);
	const routes = new Map([
		["o", openai],
		["g", google],
	]);
	openRelay(
		socket,
		{ routes, env: {}, modelsJson: {}, authJson: {} },
		{ refusal: () => undefined, counted: (t, c) => counted.push([t, c]) },
	);
});

afterAll(async () => {
	closeRelay(socket);
	upstream.closeAllConnections();
	await new Promise((r) => upstream.close(r));
	rmSync(root, { recursive: true, force: true });
});

beforeEach(() => {
	counted = [];
	seen = [];
	answer = chatAnswer();
});

/** Sends `body` (an object, or raw bytes) to the relay; resolves with the answer's status, headers and text. */
function call(
	path: string,
	body: object | Buffer,
	headers: Record<string, string> = {},
): Promise<{ status: number; headers: IncomingHttpHeaders; text: string }> {
	const payload = Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body));
	return new Promise((resolve, reject) => {
		const req = request(
			{ socketPath: socket, path, method: "POST", headers: { "content-type": "application/json", ...headers } },
			(res) => {
				let text = "";
				res.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
				res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
			},
		);
		req.on("error", reject);
		req.end(payload);
	});
}

const costAt = (price: ModelCost, input: number, output: number) => (input * price.input + output * price.output) / 1e6;

describe("the model a call is priced at", () => {
	it("is the request's top-level model, never a decoy nested in it, when the answer names a snapshot", async () => {
		answer = chatAnswer("pro-2025-06-10");
		const decoy = { metadata: { model: "nano" }, model: "pro", messages: [{ role: "user", content: "hi" }] };
		expect((await call("/o/v1/chat/completions", decoy)).status).toBe(200);
		await until(() => counted.length > 0);
		expect(counted).toEqual([[150, costAt(prices(20, 80), 100, 50)]]);
	});

	it("is the answer's dated snapshot's undated entry (o3-pro-2025-06-10 → o3-pro)", async () => {
		answer = chatAnswer("mid-2025-06-10");
		// No model in the request (nothing else to go by): the snapshot's entry, not the route's dearest.
		expect((await call("/o/v1/chat/completions", { messages: [] })).status).toBe(200);
		await until(() => counted.length > 0);
		expect(counted).toEqual([[150, costAt(prices(1, 2), 100, 50)]]);
	});

	it("is the route's highest when the model is unknown, the body's only model is nested, or it names two", async () => {
		await call("/o/v1/chat/completions", { extra: { model: "nano" }, messages: [] });
		// Parsers differ on which of two it keeps.
		await call("/o/v1/chat/completions", Buffer.from('{"model":"nano","messages":[],"model":"mid"}'));
		await until(() => counted.length === 2);
		expect(counted).toEqual(Array(2).fill([150, costAt(prices(20, 80), 100, 50)]));
	});

	it("reads a Gemini stream's usageMetadata, priced at the path's model, not a nested free one", async () => {
		answer = (_req, _body, res) => {
			res.writeHead(200, { "content-type": "text/event-stream" });
			for (const count of [10, 70001])
				res.write(
					`data: ${JSON.stringify({ candidates: [{ content: { parts: [{ text: "x" }] } }], usageMetadata: { promptTokenCount: 1, candidatesTokenCount: count - 1, totalTokenCount: count } })}\r\n\r\n`,
				);
			res.end();
		};
		const body = { contents: [{ role: "user", parts: [{ text: "hi" }] }], cachedContent: { model: "gemma" } };
		const path = "/g/v1beta/models/gemini-pro:streamGenerateContent?alt=sse";
		expect((await call(path, body)).status).toBe(200);
		await until(() => counted.length > 0);
		expect(counted).toEqual([[70001, costAt(prices(1.25, 10), 1, 70000)]]);
	});
});

describe("what the relay reads of a request before it is sent", () => {
	it("refuses background: true (a responses call that would run and bill after it ended), in both SDKs' shapes", async () => {
		answer = (_req, body, res) => json(res, { id: "r", status: "queued", model: body.model, usage: null });
		for (const background of [true, "true", 1, {}]) {
			const refused = await call("/o/v1/responses", { model: "pro", background, input: "hi" });
			expect(refused.status).toBe(403);
			expect(JSON.parse(refused.text)).toMatchObject({
				type: "error",
				error: { type: "relay_background_refused", code: "relay_background_refused" },
			});
		}
		// Written with an escape, as a parser reads it.
		const escaped = Buffer.from('{"model":"pro","b\\u0061ckground":true,"input":"hi"}');
		expect((await call("/o/v1/responses", escaped)).status).toBe(403);
		expect(seen).toEqual([]);
		expect((await call("/o/v1/responses", { model: "pro", background: false, input: "hi" })).status).toBe(200);
		expect(seen).toHaveLength(1);
	});

	it("has a streamed chat completion ask for its usage (stream_options.include_usage), the caller's options kept", async () => {
		answer = (_req, _body, res) => {
			res.writeHead(200, { "content-type": "text/event-stream" });
			res.end(`data: ${JSON.stringify({ choices: [], usage: openaiUsage })}\n\ndata: [DONE]\n\n`);
		};
		await call("/o/v1/chat/completions", { model: "mid", stream: true, messages: [] });
		await call("/o/v1/chat/completions", {
			model: "mid",
			stream: true,
			stream_options: { include_usage: false, include_obfuscation: false },
			messages: [],
		});
		answer = chatAnswer();
		await call("/o/v1/chat/completions", { model: "mid", messages: [] });
		const bodies = seen.map((s) => JSON.parse(s.body));
		expect(bodies[0]).toEqual({ stream_options: { include_usage: true }, model: "mid", stream: true, messages: [] });
		expect(bodies[1].stream_options).toEqual({ include_usage: true, include_obfuscation: false });
		expect(bodies[2].stream_options).toBeUndefined();
		// The length sent is the body's.
		expect(seen.map((s) => Number(s.headers["content-length"]))).toEqual(seen.map((s) => Buffer.byteLength(s.body)));
	});

	it("refuses a body past its cap (413), a compressed one (415) and one that is not a JSON object (400)", async () => {
		const saved = requestLimits.bodyBytes;
		requestLimits.bodyBytes = 4096;
		try {
			const big = { model: "mid", messages: [{ role: "user", content: "x".repeat(5000) }] };
			const tooLarge = await call("/o/v1/chat/completions", big);
			expect(tooLarge.status).toBe(413);
			expect(JSON.parse(tooLarge.text).error.code).toBe("relay_body_too_large");
			// Chunked (no length given): refused once the bytes read pass the cap.
			const chunked = await call("/o/v1/chat/completions", big, { "transfer-encoding": "chunked" });
			expect(chunked.status).toBe(413);
		} finally {
			requestLimits.bodyBytes = saved;
		}
		const gzip = await call("/o/v1/chat/completions", { model: "mid" }, { "content-encoding": "gzip" });
		expect(gzip.status).toBe(415);
		for (const text of ["[1]", '{"model":"mid"', '{"model":"mid"} {}', "not json"]) {
			const invalid = await call("/o/v1/chat/completions", Buffer.from(text));
			expect([text, invalid.status, JSON.parse(invalid.text).error.code]).toEqual([text, 400, "relay_body_invalid"]);
		}
		expect(seen).toEqual([]);
	});
});
