import { request } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { Outbox, sseStream, takeOver } from "../../src/http/streams/sse.ts";
import { gatewayFrame, joinChunks, releaseBatch } from "../../src/http/streams/sse-frames.ts";

const options = { heartbeatMs: 60_000, maxBufferedBytes: 1 << 20, dropGraceMs: 1000 };

/** An app with one SSE route whose outbox the test feeds, and a middleware that sets a header after the handler. */
function streamingApp() {
	const state = { out: new Outbox(options.maxBufferedBytes), detached: 0 };
	const app = new Hono();
	app.use(async (c, next) => {
		await next();
		c.res.headers.set("x-after-handler", "yes");
	});
	app.get("/events", (c) => {
		state.out = new Outbox(options.maxBufferedBytes);
		state.out.push(gatewayFrame("stream_open", {}));
		return sseStream(c, options, state.out, () => state.detached++);
	});
	return { app, state };
}

const until = async (check: () => boolean) => {
	while (!check()) await new Promise((r) => setTimeout(r, 5));
};

let close: (() => void) | undefined;
afterEach(() => close?.());

describe("an SSE answer taken over by the server", () => {
	it("goes to Node's response with every middleware's headers, frames in order, and detaches when the client goes", async () => {
		const { app, state } = streamingApp();
		const answers: Response[] = [];
		const server = serve({
			fetch: async (req, env) => {
				const answer = takeOver(await app.fetch(req, env), env.outgoing as never);
				answers.push(answer);
				return answer;
			},
			hostname: "127.0.0.1",
			port: 0,
		});
		close = () => server.close();
		await new Promise((r) => server.once("listening", r));
		const port = (server.address() as AddressInfo).port;
		const res = await new Promise<import("node:http").IncomingMessage>((resolve, reject) =>
			request(`http://127.0.0.1:${port}/events`).once("response", resolve).once("error", reject).end(),
		);
		expect(answers[0]).toBe(RESPONSE_ALREADY_SENT);
		expect(res.statusCode).toBe(200);
		expect(res.headers["content-type"]).toBe("text/event-stream");
		expect(res.headers["cache-control"]).toBe("no-cache, no-transform");
		expect(res.headers["x-after-handler"]).toBe("yes");
		let text = "";
		res.setEncoding("utf8");
		res.on("data", (chunk: string) => {
			text += chunk;
		});
		for (let i = 1; i <= 3; i++) state.out.push(gatewayFrame("tick", { i }, i), i);
		await until(() => text.includes('"i":3'));
		expect(text).toBe(
			[gatewayFrame("stream_open", {}), ...[1, 2, 3].map((i) => gatewayFrame("tick", { i }, i))].join(""),
		);
		expect(state.detached).toBe(0);
		res.destroy();
		await until(() => state.detached === 1);
	});

	it("is left to @hono/node-server when the body was read already, or there is no Node response", async () => {
		const { app } = streamingApp();
		const answer = await app.request("/events");
		expect(takeOver(answer, undefined)).toBe(answer);
		answer.body?.getReader();
		expect(takeOver(answer, {} as never)).toBe(answer);
		await answer.body?.cancel().catch(() => {});
	});
});

describe("the web body, where no server takes the stream (app.request)", () => {
	it("carries the same frames, pumped as it is read, and detaches when it is cancelled", async () => {
		const { app, state } = streamingApp();
		const answer = await app.request("/events");
		expect(answer.headers.get("x-after-handler")).toBe("yes");
		state.out.push(gatewayFrame("tick", { i: 1 }, 1), 1);
		const reader = (answer.body as ReadableStream<Uint8Array>).getReader();
		let text = "";
		while (!text.includes('"i":1')) text += Buffer.from((await reader.read()).value ?? []).toString("utf8");
		expect(text).toBe(gatewayFrame("stream_open", {}) + gatewayFrame("tick", { i: 1 }, 1));
		await reader.cancel();
		expect(state.detached).toBe(1);
	});
});

describe("the batch pool", () => {
	const event = (seq: number) => ({
		seq,
		type: "message_update",
		data: Buffer.from(`{"type":"message_update","n":${seq}}`),
	});

	it("hands a slab out again only after it was given back, and takes back no other buffer", () => {
		const first = joinChunks([event(1), event(2)], undefined, true) as Uint8Array;
		const second = joinChunks([event(3)], undefined, true) as Uint8Array;
		expect(second.buffer).not.toBe(first.buffer);
		releaseBatch(first);
		const third = joinChunks([event(4)], undefined, true) as Uint8Array;
		expect(third.buffer).toBe(first.buffer);
		expect(Buffer.from(third).toString()).toBe(
			'id: 4\nevent: message_update\ndata: {"type":"message_update","n":4}\n\n',
		);
		const own = Buffer.alloc(256 * 1024);
		releaseBatch(own);
		releaseBatch(second);
		const fourth = joinChunks([event(5)], undefined, true) as Uint8Array;
		expect(fourth.buffer).toBe(second.buffer);
		expect(fourth.buffer).not.toBe(own.buffer);
	});

	it("is not used unless asked: a batch for a sink that gives nothing back is its own buffer", () => {
		const a = joinChunks([event(1)], undefined, false) as Uint8Array;
		releaseBatch(a);
		const b = joinChunks([event(2)], undefined, true) as Uint8Array;
		expect(b.buffer).not.toBe(a.buffer);
	});
});
