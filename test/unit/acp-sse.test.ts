import { describe, expect, it } from "vitest";
import { connectGateway, maxFrameChars, run } from "../../src/acp/gateway.ts";
import { GatewayError, parseSse, type SseFrame } from "../../src/client/index.ts";

// Issue 29, "bounded": the ACP bridge's SSE reader held an endless line whole (586 MiB, 100% CPU,
// rescanning the growing buffer at every chunk). A frame is capped; past it the stream fails. The
// bridge reads with the client's parser (src/client/sse.ts) and streams (maxFrameChars).
const MiB = 1024 * 1024;

/** A body of `total` bytes of `fill` in 64 KiB chunks, then `tail`; endless when `total` is Infinity. */
function body(total: number, fill = "a", tail = ""): { stream: ReadableStream<Uint8Array>; pulled: () => number } {
	const chunk = new TextEncoder().encode(fill.repeat(64 * 1024));
	let sent = 0;
	const stream = new ReadableStream<Uint8Array>({
		pull(controller) {
			if (sent >= total) {
				if (tail) controller.enqueue(new TextEncoder().encode(tail));
				controller.close();
				return;
			}
			sent += chunk.length;
			controller.enqueue(chunk);
		},
	});
	return { stream, pulled: () => sent };
}

async function drain(stream: ReadableStream<Uint8Array>) {
	const frames: Pick<SseFrame, "id" | "event" | "data">[] = [];
	for await (const { id, event, data } of parseSse(stream, { maxFrameChars })) frames.push({ id, event, data });
	return frames;
}

describe("the ACP bridge's SSE reader", () => {
	it("fails a stream whose frame passes the cap, without reading on", async () => {
		const { stream, pulled } = body(Number.POSITIVE_INFINITY);
		const started = Date.now();
		const error = await drain(stream).then(
			() => undefined,
			(e: unknown) => e,
		);
		expect(error).toBeInstanceOf(Error);
		expect(String((error as Error).message)).toMatch(/16 MiB/);
		expect(pulled()).toBeLessThanOrEqual(17 * MiB);
		expect(Date.now() - started).toBeLessThan(5000);
	});

	it("still reads frames up to the cap, split anywhere, CRLF across chunks included", async () => {
		const small = new TextEncoder().encode(
			'id: 1\r\nevent: a\r\ndata: {"n":1}\r\n\r\n: heartbeat\n\nid: 2\ndata: {"n":2}\n\n',
		);
		for (const size of [1, 2, 3, 7, small.length]) {
			const frames = await drain(chunked(small, size));
			expect(frames).toEqual([
				{ id: "1", event: "a", data: '{"n":1}' },
				{ id: "2", event: "message", data: '{"n":2}' },
			]);
		}
		const big = new TextEncoder().encode(`data: ${"x".repeat(8 * MiB)}\n\nid: 3\ndata: {}\n\n`);
		for (const size of [4096, 65_536, big.length]) {
			const frames = await drain(chunked(big, size));
			expect(frames.map((f) => f.id)).toEqual([undefined, "3"]);
			expect(frames[0]?.data.length).toBe(8 * MiB);
		}
	});

	it("a run whose stream sends an endless line fails with that reason, and is not retried", async () => {
		let calls = 0;
		const gateway = connectGateway({
			url: "http://gateway.invalid",
			token: undefined,
			log: () => {},
			reconnectForMs: 60_000,
			fetch: async () => {
				calls++;
				return new Response(body(Number.POSITIVE_INFINITY).stream, {
					headers: { "content-type": "text/event-stream" },
				});
			},
		});
		const error = await run(gateway, "ses_x", { message: "hi" }, () => false, new AbortController().signal).then(
			() => undefined,
			(e: unknown) => e,
		);
		expect(String((error as Error)?.message)).toMatch(/16 MiB/);
		expect(calls).toBe(1);
	});

	it("a cut run resumes with the same POST and Last-Event-ID, logs the cut, and an error frame fails it", async () => {
		const calls: { method: string; url: string; after: string | null }[] = [];
		const logs: string[] = [];
		// The text, then the connection breaks.
		const cut = (text: string) => {
			let sent = false;
			return new ReadableStream<Uint8Array>({
				pull(controller) {
					if (sent) return controller.error(new Error("socket hang up"));
					sent = true;
					controller.enqueue(new TextEncoder().encode(text));
				},
			});
		};
		const bodies = [
			cut(
				'data: {"type":"stream_open","after":4,"runId":"run_1"}\n\nid: 5\ndata: {"type":"response","id":"run_1","command":"prompt","success":true}\n\nid: 6\ndata: {"type":"agent_start"}\n\n',
			),
			'data: {"type":"stream_open","after":6}\n\nid: 6\ndata: {"type":"agent_start"}\n\nid: 7\ndata: {"type":"agent_settled"}\n\n',
			'data: {"type":"stream_open","after":0,"runId":"run_2"}\n\ndata: {"type":"error","status":504,"code":"pi_timeout","detail":"pi did not answer"}\n\n',
		];
		const gateway = connectGateway({
			url: "http://gateway.invalid/",
			token: "t",
			log: (line) => logs.push(line),
			fetch: async (url, init) => {
				calls.push({
					method: String(init?.method),
					url: String(url),
					after: new Headers(init?.headers).get("last-event-id"),
				});
				const next = bodies.shift();
				return new Response(next ?? "", { headers: { "content-type": "text/event-stream" } });
			},
		});
		const seen: string[] = [];
		await run(
			gateway,
			"ses_x",
			{ message: "hi" },
			(e) => {
				seen.push(e.type);
				return e.type === "agent_settled";
			},
			new AbortController().signal,
		);
		expect(seen).toEqual(["stream_open", "response", "agent_start", "agent_settled"]);
		expect(calls).toEqual([
			{ method: "POST", url: "http://gateway.invalid/v1/sessions/ses_x/prompt/stream", after: null },
			{ method: "POST", url: "http://gateway.invalid/v1/sessions/ses_x/prompt/stream", after: "6" },
		]);
		expect(logs).toEqual(["pi-gateway acp: event stream cut (socket hang up); reconnecting after 6"]);
		const error = await run(gateway, "ses_x", { message: "hi" }, () => false, new AbortController().signal).then(
			() => undefined,
			(e: unknown) => e,
		);
		expect(error).toBeInstanceOf(GatewayError);
		expect(error).toMatchObject({ status: 504, code: "pi_timeout", detail: "pi did not answer" });
	});
});

function chunked(bytes: Uint8Array, size: number): ReadableStream<Uint8Array> {
	let at = 0;
	return new ReadableStream<Uint8Array>({
		pull(controller) {
			if (at >= bytes.length) return controller.close();
			controller.enqueue(bytes.subarray(at, at + size));
			at += size;
		},
	});
}
