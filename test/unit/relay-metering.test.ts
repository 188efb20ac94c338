import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, request, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { EventLog } from "../../src/sessions/events/event-log.ts";
import type { ModelCost, RelayPlan, RelayRoute } from "../../src/sessions/relay/credentials.ts";
import type { RelaySink } from "../../src/sessions/relay/metering.ts";
import { closeRelay, openRelay, relayLimits } from "../../src/sessions/relay/server.ts";
import { Budget } from "../../src/sessions/session/budget.ts";
import { until } from "../helpers/gateway.ts";

// Budget holes an attacker's review found in the relay (issue 42): a call whose caller hung up was
// never counted, an answer without a usage figure counted 0, parallel calls each passed the budget's
// check at their start, and a model without a price cost $0. A relay on a unix socket, a provider
// on 127.0.0.1 whose answers the test scripts, and a sink that records what the relay counts.

const usage = { prompt_tokens: 100, completion_tokens: 50, total_tokens: 150 };
const prices = (input: number, output: number): ModelCost => ({ input, output, cacheRead: 0, cacheWrite: 0 });

let root: string;
let socket: string;
let upstream: Server;
/** Answers the provider holds until the test lets them go. */
const held: { res: ServerResponse; body: any }[] = [];
/** Set when the provider sees a trickled stream's caller go. */
let trickleClosed = false;
let counted: [number, number][] = [];
/** The bytes of the last request the provider got (the relay adds stream_options to a stream). */
let received = 0;
let refuse: RelaySink["refusal"] = () => undefined;

const json = (res: ServerResponse, body: any) => {
	res.writeHead(200, { "content-type": "application/json" });
	res.end(JSON.stringify({ id: "c", object: "chat.completion", model: body.model, choices: [], usage }));
};

/** The SSE body of a complete stream with no usage figure (OpenAI without include_usage). */
const noUsageStream = ["Hello", " there", "!"]
	.map(
		(text) =>
			`data: ${JSON.stringify({ object: "chat.completion.chunk", choices: [{ delta: { content: text } }] })}\n\n`,
	)
	.join("")
	.concat("data: [DONE]\n\n");

function route(provider: string, costs: [string, ModelCost][]): RelayRoute {
	const { port } = upstream.address() as AddressInfo;
	return {
		provider,
		upstream: `http://127.0.0.1:${port}/v1`,
		secrets: new Map(),
		costs: new Map(costs),
		keyHeaders: new Set(["authorization"]),
		apis: new Set(["openai-completions"]),
		queryKey: false,
	};
}

beforeAll(async () => {
	root = mkdtempSync(join(tmpdir(), "relay-metering-"));
	socket = join(root, "relay.sock");
	upstream = createServer(async (req, res) => {
		const parts: Buffer[] = [];
		for await (const part of req) parts.push(part as Buffer);
		received = Buffer.concat(parts).length;
		const body = JSON.parse(Buffer.concat(parts).toString("utf8"));
		if (body.mode === "hold") held.push({ res, body });
		else if (body.mode === "refused") {
			res.writeHead(429, { "content-type": "application/json" });
			res.end(JSON.stringify({ error: { message: "rate limited", type: "rate_limit_exceeded" } }));
		} else if (body.mode === "no-usage") {
			res.writeHead(200, { "content-type": "text/event-stream" });
			res.end(noUsageStream);
		} else if (body.mode === "trickle") {
			res.writeHead(200, { "content-type": "text/event-stream" });
			const chunk = `data: ${JSON.stringify({ choices: [{ delta: { content: "tok" } }] })}\n\n`;
			const timer = setInterval(() => res.write(chunk), 20);
			res.on("close", () => {
				clearInterval(timer);
				trickleClosed = true;
			});
		} else json(res, body);
	});
	await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
	const plan: RelayPlan = {
		routes: new Map([
			[
				"a",
				route("a", [
					["cheap", prices(1, 2)],
					["dear", prices(10, 1)],
				]),
			],
			["free", route("free", [])],
		]),
		env: {},
		modelsJson: {},
		authJson: {},
	};
	openRelay(socket, plan, { refusal: (call) => refuse(call), counted: (t, c) => counted.push([t, c]) });
});

afterAll(async () => {
	closeRelay(socket);
	upstream.closeAllConnections();
	await new Promise((r) => upstream.close(r));
	rmSync(root, { recursive: true, force: true });
});

beforeEach(() => {
	counted = [];
	refuse = () => undefined;
});

interface Answer {
	status: number;
	headers: IncomingHttpHeaders;
	text: string;
}

/** POSTs `body` to the relay's route; `onData` sees each chunk of the answer (and may hang up). */
function call(body: object, path = "/a/v1/chat/completions", onData?: (chunk: Buffer, hangUp: () => void) => void) {
	const payload = JSON.stringify(body);
	const req = request({ socketPath: socket, path, method: "POST", headers: { "content-type": "application/json" } });
	const answer = new Promise<Answer>((resolve, reject) => {
		req.on("response", (res) => {
			let text = "";
			res.on("data", (chunk: Buffer) => {
				text += chunk.toString("utf8");
				onData?.(chunk, () => req.destroy());
			});
			res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
			res.on("error", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
		});
		req.on("error", reject);
	});
	answer.catch(() => {});
	req.end(payload);
	return { answer, bytes: Buffer.byteLength(payload), req };
}

describe("the relay counts every call once", () => {
	it("counts a call whose caller hangs up mid-stream, and cuts the stream at the provider", async () => {
		trickleClosed = false;
		const sent = call({ model: "cheap", mode: "trickle", stream: true }, undefined, (_chunk, hangUp) => hangUp());
		await until(() => trickleClosed);
		await until(() => counted.length > 0);
		expect(counted).toHaveLength(1);
		const [tokens, cost] = counted[0] as [number, number];
		// No figure came: the request's bytes / 4 as input, at least a token of output.
		expect(tokens).toBeGreaterThan(Math.ceil(sent.bytes / 4));
		expect(cost).toBeGreaterThan(0);
	});

	it("reads a plain JSON answer on after its caller hung up, and counts the provider's figures", async () => {
		const sent = call({ model: "cheap", mode: "hold" });
		await until(() => held.length === 1);
		sent.req.destroy();
		await new Promise((r) => sent.req.once("close", r));
		const { res, body } = held.splice(0)[0] as (typeof held)[number];
		json(res, body);
		await until(() => counted.length > 0);
		expect(counted).toEqual([[150, (100 * 1 + 50 * 2) / 1e6]]);
	});

	it("counts an estimate for an answer without a usage figure: request and answer bytes / 4", async () => {
		const sent = call({ model: "cheap", mode: "no-usage", stream: true });
		const answer = await sent.answer;
		expect(answer.text).toBe(noUsageStream);
		await until(() => counted.length > 0);
		// The request as the provider got it: with stream_options.include_usage, which it ignored.
		expect(received).toBeGreaterThan(sent.bytes);
		const input = Math.ceil(received / 4);
		const output = Math.ceil(Buffer.byteLength(noUsageStream) / 4);
		expect(counted).toEqual([[input + output, (input * 1 + output * 2) / 1e6]]);
	});

	it("counts nothing for the provider's own refusal without a figure (a 429 pi retries)", async () => {
		expect((await call({ model: "cheap", mode: "refused" }).answer).status).toBe(429);
		await call({ model: "cheap" }).answer;
		await until(() => counted.length > 0);
		expect(counted).toEqual([[150, (100 * 1 + 50 * 2) / 1e6]]);
	});
});

describe("the relay's calls in flight", () => {
	it("holds a session's model calls in flight to a few: the next is 429 in both SDKs' shapes", async () => {
		const calls = Array.from({ length: 2 * relayLimits.calls }, () => call({ model: "cheap", mode: "hold" }));
		const refused: Answer[] = [];
		for (const c of calls) c.answer.then((a) => a.status === 429 && refused.push(a));
		await until(() => held.length + refused.length === calls.length);
		expect(held).toHaveLength(relayLimits.calls);
		for (const answer of refused) {
			expect(answer.headers["retry-after"]).toBe("1");
			expect(JSON.parse(answer.text)).toMatchObject({
				type: "error",
				error: { type: "relay_calls_limit", code: "relay_calls_limit" },
			});
		}
		for (const { res, body } of held.splice(0)) json(res, body);
		await until(() => counted.length === relayLimits.calls);
		// The slots are free again.
		expect((await call({ model: "cheap" }).answer).status).toBe(200);
	});
});

describe("the relay's prices", () => {
	it("charges a model the route has no price for at the route's highest price, field by field", async () => {
		await call({ model: "unlisted" }).answer;
		await until(() => counted.length > 0);
		expect(counted).toEqual([[150, (100 * 10 + 50 * 2) / 1e6]]);
	});

	it("tells the budget whether the call's route has prices at all", async () => {
		const seen: boolean[] = [];
		refuse = ({ priced }) => {
			seen.push(priced);
			return priced ? undefined : { code: "budget_unpriced", message: "no prices" };
		};
		expect((await call({ model: "cheap" }).answer).status).toBe(200);
		const answer = await call({ model: "m" }, "/free/v1/chat/completions").answer;
		expect(answer.status).toBe(403);
		expect(JSON.parse(answer.text).error).toMatchObject({ code: "budget_unpriced", message: "no prices" });
		expect(seen).toEqual([true, false]);
	});

	it("a budget of cost alone refuses a route without prices; a token limit beside it lets the call pass", () => {
		const budget = new Budget(new EventLog(100, 1_000_000));
		expect(budget.refusal("s", { priced: false })).toBeUndefined();
		budget.limits = { maxCostUsd: 1 };
		expect(budget.refusal("s", { priced: true })).toBeUndefined();
		expect(budget.refusal("s", { priced: false })?.code).toBe("budget_unpriced");
		budget.limits = { maxCostUsd: 1, maxTokens: 1000 };
		expect(budget.refusal("s", { priced: false })).toBeUndefined();
		budget.countRelayed(1000, 0);
		expect(budget.refusal("s", { priced: true })?.code).toBe("budget_exhausted");
	});
});
