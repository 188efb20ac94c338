import { describe, expect, it } from "vitest";
import { meteredUsage, normaliseUsage, totalTokens, UsageTap } from "../../src/sessions/relay/usage.ts";

// The relay counts each call's usage from the provider's own answer (issue 42 item 2), reading a
// copy of each chunk as it passes: every API shape pi speaks, streamed or not, however the bytes
// are cut into chunks.

const sse = (events: object[], done = true) =>
	`${events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("")}${done ? "data: [DONE]\n\n" : ""}`;

/** Feeds `text` to a tap in chunks cut at `cuts` (byte offsets), and returns what it read. */
function read(contentType: string, text: string, cuts: number[] = []) {
	const bytes = Buffer.from(text, "utf8");
	const tap = new UsageTap(contentType);
	let from = 0;
	for (const at of [...cuts, bytes.length]) {
		tap.push(bytes.subarray(from, at));
		from = at;
	}
	return tap.end();
}

const openaiChatStream = sse([
	{ id: "c1", object: "chat.completion.chunk", model: "gpt-x", choices: [{ index: 0, delta: { content: "hé" } }] },
	{
		id: "c1",
		object: "chat.completion.chunk",
		model: "gpt-x",
		choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
	},
	{
		id: "c1",
		object: "chat.completion.chunk",
		model: "gpt-x",
		choices: [],
		usage: {
			prompt_tokens: 120,
			completion_tokens: 30,
			total_tokens: 150,
			prompt_tokens_details: { cached_tokens: 100 },
		},
	},
]);

const anthropicStream = [
	`event: message_start\ndata: ${JSON.stringify({ type: "message_start", message: { id: "m1", model: "claude-x", usage: { input_tokens: 40, output_tokens: 1, cache_read_input_tokens: 300, cache_creation_input_tokens: 20 } } })}\n\n`,
	`event: content_block_delta\ndata: ${JSON.stringify({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "ünïcode" } })}\n\n`,
	`event: message_delta\ndata: ${JSON.stringify({ type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 75 } })}\n\n`,
	`event: message_stop\ndata: ${JSON.stringify({ type: "message_stop" })}\n\n`,
].join("");

const responsesStream = [
	`event: response.created\ndata: ${JSON.stringify({ type: "response.created", response: { id: "r1", model: "gpt-r", usage: null } })}\n\n`,
	`event: response.output_text.delta\ndata: ${JSON.stringify({ type: "response.output_text.delta", delta: "x" })}\n\n`,
	`event: response.completed\ndata: ${JSON.stringify({ type: "response.completed", response: { id: "r1", model: "gpt-r", usage: { input_tokens: 500, input_tokens_details: { cached_tokens: 200 }, output_tokens: 60, output_tokens_details: { reasoning_tokens: 10 }, total_tokens: 560 } } })}\n\n`,
].join("");

describe("UsageTap", () => {
	it("reads OpenAI chat completions streamed with include_usage (the cached part apart)", () => {
		const usage = read("text/event-stream; charset=utf-8", openaiChatStream);
		expect(usage).toEqual({ input: 20, output: 30, cacheRead: 100, cacheWrite: 0, model: "gpt-x" });
		expect(totalTokens(usage)).toBe(150);
	});

	it("reads a non-streamed OpenAI chat completion", () => {
		const body = JSON.stringify({
			id: "c2",
			object: "chat.completion",
			model: "gpt-y",
			choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }],
			usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
		});
		expect(read("application/json", body, [1, 7, 30])).toEqual({
			input: 10,
			output: 5,
			cacheRead: 0,
			cacheWrite: 0,
			model: "gpt-y",
		});
	});

	it("reads OpenAI responses from response.completed (cached tokens inside input_tokens)", () => {
		expect(read("text/event-stream", responsesStream)).toEqual({
			input: 300,
			output: 60,
			cacheRead: 200,
			cacheWrite: 0,
			model: "gpt-r",
		});
		// Not streamed: the response object itself.
		const body = JSON.stringify({
			id: "r2",
			object: "response",
			model: "gpt-r",
			usage: { input_tokens: 9, output_tokens: 4, total_tokens: 13 },
		});
		expect(totalTokens(read("application/json", body))).toBe(13);
	});

	it("reads Anthropic messages: message_start's input and cache figures, message_delta's output", () => {
		expect(read("text/event-stream", anthropicStream)).toEqual({
			input: 40,
			output: 75,
			cacheRead: 300,
			cacheWrite: 20,
			model: "claude-x",
		});
		const body = JSON.stringify({
			id: "m2",
			type: "message",
			model: "claude-y",
			usage: { input_tokens: 12, output_tokens: 7, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
		});
		expect(read("application/json", body)).toEqual({
			input: 12,
			output: 7,
			cacheRead: 0,
			cacheWrite: 0,
			model: "claude-y",
		});
	});

	// Gemini's usageMetadata was never read (an attacker's review: an answer of 70,001 tokens raised
	// the budget by about 80, the bytes' estimate).
	it("reads Gemini's usageMetadata: streamed (running totals), JSON, and the JSON array of a stream without alt=sse", () => {
		const chunk = (text: string, usageMetadata: object) => ({
			candidates: [{ content: { parts: [{ text }], role: "model" } }],
			usageMetadata,
			modelVersion: "gemini-z",
		});
		const first = chunk("a", {
			promptTokenCount: 1200,
			cachedContentTokenCount: 1000,
			candidatesTokenCount: 3,
			totalTokenCount: 1203,
		});
		const last = chunk("b", {
			promptTokenCount: 1200,
			cachedContentTokenCount: 1000,
			candidatesTokenCount: 40,
			thoughtsTokenCount: 500,
			totalTokenCount: 1740,
		});
		// Thinking tokens are output (billed so), the cached part apart from the input.
		const figures = { input: 200, output: 540, cacheRead: 1000, cacheWrite: 0, model: "gemini-z" };
		expect(read("text/event-stream", sse([first, last], false))).toEqual(figures);
		expect(read("application/json", JSON.stringify(last))).toEqual(figures);
		expect(read("application/json", JSON.stringify([first, last]), [5, 100])).toEqual(figures);
		// A total beyond the parts (a tool-use prompt, a field the tap does not know) counts as output.
		const totalOnly = read("application/json", JSON.stringify({ usageMetadata: { totalTokenCount: 70001 } }));
		expect(totalTokens(totalOnly)).toBe(70001);
		const toolUse = {
			promptTokenCount: 10,
			toolUsePromptTokenCount: 90,
			candidatesTokenCount: 5,
			totalTokenCount: 105,
		};
		expect(read("application/json", JSON.stringify({ usageMetadata: toolUse }))).toMatchObject({
			input: 100,
			output: 5,
		});
	});

	it("reads the same figures however the stream is cut: at every byte, inside a multi-byte character, CRLF lines", () => {
		for (const [text, whole] of [
			[openaiChatStream, read("text/event-stream", openaiChatStream)],
			[anthropicStream, read("text/event-stream", anthropicStream)],
			[responsesStream, read("text/event-stream", responsesStream)],
		] as const) {
			const length = Buffer.byteLength(text);
			// One chunk a byte.
			expect(
				read(
					"text/event-stream",
					text,
					Array.from({ length: length - 1 }, (_, i) => i + 1),
				),
			).toEqual(whole);
			// Two chunks, cut at each byte.
			for (let at = 1; at < length; at++) expect(read("text/event-stream", text, [at])).toEqual(whole);
		}
		const crlf = anthropicStream.replaceAll("\n", "\r\n");
		expect(read("text/event-stream", crlf, [7, 100, 101, 300])).toEqual(read("text/event-stream", anthropicStream));
	});

	it("reads the last event of a stream that ends without a newline", () => {
		const text = sse([{ model: "m", choices: [], usage: { prompt_tokens: 3, completion_tokens: 2 } }], false).trimEnd();
		expect(totalTokens(read("text/event-stream", text))).toBe(5);
	});

	it("drops a line longer than 1 MiB, and still reads the usage after it", () => {
		const long = `data: {"choices":[{"delta":{"content":"${"x".repeat(1_500_000)}"}}]}\n\n`;
		const text = long + openaiChatStream;
		const cuts = [10, 600_000, 1_200_000, Buffer.byteLength(long) - 5, Buffer.byteLength(long) + 3];
		expect(read("text/event-stream", text, cuts)).toEqual(read("text/event-stream", openaiChatStream));
	});

	it("counts nothing, and does not throw, for a body that is not JSON or holds no usage", () => {
		const zero = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
		expect(read("application/json", "<html>502 Bad Gateway</html>")).toEqual(zero);
		expect(read("application/json", '{"usage": {"prompt_tokens": 5')).toEqual(zero);
		expect(read("text/plain", "")).toEqual(zero);
		expect(read("text/event-stream", "data: {not json\n\ndata: [DONE]\n\n: comment\n\n")).toEqual(zero);
		// An error answer in JSON: no usage, nothing counted.
		expect(read("application/json", JSON.stringify({ error: { message: "rate limited" } }))).toEqual(zero);
	});

	it("takes no figure that is negative, not finite or not a number", () => {
		expect(normaliseUsage({ prompt_tokens: -5, completion_tokens: "7" })).toEqual({
			input: 0,
			output: 0,
			cacheRead: 0,
			cacheWrite: 0,
		});
		expect(normaliseUsage({ input_tokens: Number.POSITIVE_INFINITY, output_tokens: 3 }).output).toBe(3);
	});
});

/** Feeds `text` to a tap and returns its figures, whether it read any, and what the relay counts for the call. */
function metered(contentType: string, text: string, request: number, ended = true) {
	const tap = new UsageTap(contentType);
	tap.push(Buffer.from(text, "utf8"));
	const figures = tap.end();
	const counted = meteredUsage({ ...figures }, tap.figured, { request, answer: Buffer.byteLength(text), ended });
	return { figures, figured: tap.figured, counted };
}

// An answer without a usage figure counted 0 (issue 42, an attacker's review): a stream without
// `stream_options.include_usage`, a stream cut before its figure, a JSON answer past the tap's cap.
describe("the usage counted for a call", () => {
	it("is the provider's figures when the answer came whole with them, a figure of 0 output included", () => {
		const whole = metered("text/event-stream", openaiChatStream, 4000);
		expect(whole.counted).toEqual(whole.figures);
		const embeddings = JSON.stringify({
			object: "list",
			data: [{ embedding: [0.1, 0.2] }],
			usage: { prompt_tokens: 8, total_tokens: 8 },
		});
		expect(metered("application/json", embeddings, 400).counted).toMatchObject({ input: 8, output: 0 });
	});

	it("is an estimate, never 0, for a stream without a figure: request and answer bytes / 4", () => {
		const text = sse([{ model: "gpt-x", choices: [{ index: 0, delta: { content: "hello" } }] }]);
		const { figured, counted } = metered("text/event-stream", text, 1001);
		expect(figured).toBe(false);
		expect(counted).toMatchObject({ input: 251, output: Math.ceil(Buffer.byteLength(text) / 4), cacheRead: 0 });
	});

	it("keeps the input read before a cut (Anthropic's message_start) and estimates the output", () => {
		const cut = anthropicStream.slice(0, anthropicStream.indexOf("event: message_delta"));
		const { figured, counted } = metered("text/event-stream", cut, 99_999, false);
		expect(figured).toBe(true);
		expect(counted).toMatchObject({ input: 40, cacheRead: 300, cacheWrite: 20 });
		expect(counted.output).toBe(Math.ceil(Buffer.byteLength(cut) / 4));
	});

	it("estimates a JSON answer past the tap's 8 MiB cap, and one with an error body but a 2xx status", () => {
		const big = JSON.stringify({
			model: "m",
			choices: [{ message: { content: "x".repeat(9 * 1024 * 1024) } }],
			usage: { prompt_tokens: 5, completion_tokens: 5 },
		});
		const { figured, counted } = metered("application/json", big, 40);
		expect(figured).toBe(false);
		expect(counted.input).toBe(10);
		expect(counted.output).toBe(Math.ceil(Buffer.byteLength(big) / 4));
		expect(totalTokens(metered("application/json", "<html>oops</html>", 8).counted)).toBe(2 + 5);
	});
});
