import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import OpenAI from "openai";
import type { ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { noPool, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { parseText } from "../helpers/sse.ts";

// Issue 44 items 1 and 2: the official `openai` client, unchanged, pointed at a real gateway (real
// pi, the demo model, README's layout): models, chat completions plain and streamed, a client tool
// round trip, OpenAI's error shape, responses that go on in one pi session, and two principals who
// cannot reach each other's runs.
let gw: TestGateway;
let dir: string;
const keys: Record<string, string> = {};
const demo = "pi-gateway-demo/demo";
const full = ["sessions:read", "sessions:write", "approvals:read", "approvals:answer"] as const;

beforeAll(async () => {
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-openai-"));
	const keysFile = join(dir, "keys.json");
	keys.alice = createKey(keysFile, "alice", [...full]).secret;
	keys.bob = createKey(keysFile, "bob", [...full]).secret;
	keys.reader = createKey(keysFile, "alice", ["sessions:read"]).secret;
	gw = await startTestGateway({ ...noPool, keysFile });
});
afterAll(async () => {
	await gw?.stop();
	rmSync(dir, { recursive: true, force: true });
});

const client = (apiKey: string | undefined = gw.config.token) =>
	new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: apiKey as string, maxRetries: 0 });
const as = (secret: string | undefined) => ({ authorization: `Bearer ${secret}` });
/** A completion's session is deleted once it answered: GET …/sessions/{id} stops finding it. */
const deleted = (id: string, secret = gw.config.token) =>
	until(async () => [404, 410].includes((await gw.fetch(`/v1/sessions/${id}`, { headers: as(secret) })).status));

const lookup: ChatCompletionTool = {
	type: "function",
	function: {
		name: "lookup_price",
		description: "The price of a product in EUR, by its SKU",
		parameters: { type: "object", properties: { sku: { type: "string" } }, required: ["sku"] },
	},
};

describe("OpenAI's SDK against the gateway", () => {
	it("lists the gateway's models in OpenAI's shape", async () => {
		const page = await client().models.list();
		expect(page.data).toEqual([
			{ id: demo, object: "model", created: expect.any(Number), owned_by: "pi-gateway-demo" },
		]);
		expect((await client(keys.alice).models.retrieve(demo)).id).toBe(demo);
	});

	it("answers a completion, as a session run that is deleted once it answered", async () => {
		const { data, response } = await client(keys.alice)
			.chat.completions.create({
				model: demo,
				messages: [
					{ role: "system", content: "Be brief." },
					{ role: "user", content: "echo: hello world" },
				],
			})
			.withResponse();
		expect(data.object).toBe("chat.completion");
		expect(data.model).toBe(demo);
		expect(data.choices).toEqual([
			{
				index: 0,
				message: { role: "assistant", content: "hello world", refusal: null },
				logprobs: null,
				finish_reason: "stop",
			},
		]);
		// The demo model counts one output token per delta ("hell", "o wo", "rld") and a message per input token.
		expect(data.usage).toMatchObject({ completion_tokens: 3, total_tokens: (data.usage?.prompt_tokens ?? 0) + 3 });
		const session = response.headers.get("x-pi-gateway-session") as string;
		expect(session).toMatch(/^ses_/);
		await deleted(session, keys.alice);
		// Audited as the REST operations it ran, under the caller (the delete is recorded once answered).
		const audited = async () => {
			const audit = (await (await gw.fetch("/v1/audit?limit=500")).json()) as {
				entries: { sessionId: string; action: string; principal: string }[];
			};
			return audit.entries
				.filter((e: { sessionId: string }) => e.sessionId === session)
				.map((e: { action: string; principal: string }) => `${e.principal} ${e.action}`)
				.sort();
		};
		await until(async () => (await audited()).length === 3);
		expect(await audited()).toEqual(["alice sessions.create", "alice sessions.delete", "alice sessions.promptStream"]);
	});

	it("streams OpenAI's chunks, usage last, then [DONE]", async () => {
		const stream = await client().chat.completions.create({
			model: "demo",
			messages: [{ role: "user", content: "count: 5" }],
			stream: true,
			stream_options: { include_usage: true },
		});
		const chunks = [];
		for await (const chunk of stream) chunks.push(chunk);
		expect(chunks[0]?.choices[0]?.delta).toEqual({ role: "assistant", content: "" });
		const text = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");
		expect(text).toBe("1 2 3 4 5");
		expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe("stop");
		expect(chunks.at(-1)?.choices).toEqual([]);
		expect(chunks.at(-1)?.usage?.completion_tokens).toBe(5);
		const raw = await gw.fetch("/v1/chat/completions", {
			method: "POST",
			headers: { "content-type": "application/json" },
			body: JSON.stringify({ model: demo, messages: [{ role: "user", content: "echo: hi" }], stream: true }),
		});
		expect(raw.headers.get("content-type")).toBe("text/event-stream");
		expect((await raw.text()).endsWith("data: [DONE]\n\n")).toBe(true);
	});

	it("stops at max_tokens with finish_reason length; json_schema runs as structured output", async () => {
		const cut = await client().chat.completions.create({
			model: demo,
			messages: [{ role: "user", content: "count: 50" }],
			max_completion_tokens: 5,
		});
		expect(cut.choices[0]?.finish_reason).toBe("length");
		expect(cut.choices[0]?.message.content).toBe("1 2 3 4 5");
		const shaped = await client().chat.completions.create({
			model: demo,
			messages: [{ role: "user", content: 'repair: {"n": 7}' }],
			response_format: {
				type: "json_schema",
				json_schema: { name: "n", schema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] } },
			},
		});
		expect(JSON.parse(shaped.choices[0]?.message.content as string)).toEqual({ n: 7 });
	});

	it("round-trips a function tool: the run waits for the tool message, then goes on", async () => {
		const alice = client(keys.alice);
		const messages: ChatCompletionMessageParam[] = [{ role: "user", content: 'tool: lookup_price {"sku": "A-1"}' }];
		const first = await alice.chat.completions.create({ model: demo, messages, tools: [lookup] });
		const choice = first.choices[0];
		expect(choice?.finish_reason).toBe("tool_calls");
		const call = choice?.message.tool_calls?.[0];
		expect(call).toMatchObject({ type: "function", function: { name: "lookup_price", arguments: '{"sku":"A-1"}' } });
		// The run is an ordinary session's, waiting on a client tool call the REST API shows.
		const session = /^call_(ses_[^.]+)\./.exec(call?.id as string)?.[1] as string;
		const pending = await gw.api(`/v1/sessions/${session}/tool-calls?status=pending`, { headers: as(keys.alice) });
		expect(pending.body.toolCalls.map((c: { name: string }) => c.name)).toEqual(["lookup_price"]);
		messages.push(choice?.message as ChatCompletionMessageParam, {
			role: "tool",
			tool_call_id: call?.id as string,
			content: "19.90 EUR",
		});
		const stream = await alice.chat.completions.create({ model: demo, messages, tools: [lookup], stream: true });
		let text = "";
		for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
		expect(text).toBe("19.90 EUR");
		await deleted(session, keys.alice);
	});

	it("answers errors in OpenAI's shape, as the SDK's typed errors", async () => {
		const ask = (c: OpenAI, body: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming> = {}) =>
			c.chat.completions.create({ model: demo, messages: [{ role: "user", content: "hi" }], ...body }).then(
				() => undefined,
				(error: unknown) => error,
			);
		const unknown = await ask(client(), { model: "gpt-4o" });
		expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
		expect(unknown).toMatchObject({
			status: 404,
			code: "model_not_found",
			param: "model",
			type: "invalid_request_error",
		});
		expect(await ask(client("not-a-key"))).toBeInstanceOf(OpenAI.AuthenticationError);
		const reader = await ask(client(keys.reader));
		expect(reader).toBeInstanceOf(OpenAI.PermissionDeniedError);
		expect(reader).toMatchObject({ code: "insufficient_scope", type: "permission_error" });
		expect(await ask(client(), { n: 2 })).toMatchObject({ status: 400, param: "n" });
		const res = await gw.fetch("/v1/chat/completions", {
			method: "POST",
			headers: { "content-type": "application/json" },
			body: "{}",
		});
		expect(res.headers.get("content-type")).toBe("application/json");
		expect(await res.json()).toEqual({
			error: { message: expect.any(String), type: "invalid_request_error", param: "model", code: "invalid_input" },
		});
	});

	it("keeps principals apart: bob's tool message for alice's call runs as his own, hers waits on", async () => {
		const first = await client(keys.alice).chat.completions.create({
			model: demo,
			messages: [{ role: "user", content: 'tool: lookup_price {"sku": "B-2"}' }],
			tools: [lookup],
		});
		const call = first.choices[0]?.message.tool_calls?.[0];
		const session = /^call_(ses_[^.]+)\./.exec(call?.id as string)?.[1] as string;
		const { data, response } = await client(keys.bob)
			.chat.completions.create({
				model: demo,
				messages: [
					{ role: "user", content: 'tool: lookup_price {"sku": "B-2"}' },
					first.choices[0]?.message as ChatCompletionMessageParam,
					{ role: "tool", tool_call_id: call?.id as string, content: "0.01 EUR" },
				],
				tools: [lookup],
			})
			.withResponse();
		expect(response.headers.get("x-pi-gateway-session")).not.toBe(session);
		expect(data.choices[0]?.message.content).not.toBe("0.01 EUR");
		expect((await gw.fetch(`/v1/sessions/${session}`, { headers: as(keys.bob) })).status).toBe(404);
		const still = await gw.api(`/v1/sessions/${session}/tool-calls?status=pending`, { headers: as(keys.alice) });
		expect(still.body.toolCalls).toHaveLength(1);
		await gw.fetch(`/v1/sessions/${session}?purge=true`, { method: "DELETE", headers: as(keys.alice) });
	});

	it("says in a comment line which approval a streamed run waits for, and goes on once it is answered", async () => {
		const res = await gw.fetch("/v1/chat/completions", {
			method: "POST",
			headers: { "content-type": "application/json", ...as(keys.alice) },
			body: JSON.stringify({
				model: demo,
				messages: [{ role: "user", content: "bash: rm -rf ./scratch" }],
				stream: true,
				pi: { extensions: ["permission-gate"] },
			}),
		});
		const reader = (res.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
		let seen = "";
		while (!/: waiting for approval .*\n/.test(seen)) {
			const part = await reader.read();
			if (part.done) throw new Error(`no approval comment in ${seen}`);
			seen += part.value;
		}
		const url = /: waiting for approval \S+ \(.*\): (\S+)\n/.exec(seen)?.[1] as string;
		expect(url).toMatch(/^\/v1\/sessions\/ses_[^/]+\/approvals\//);
		const answered = await gw.api(url, { method: "POST", json: { value: "Block" }, headers: as(keys.alice) });
		expect(answered.status).toBe(200);
		for (let part = await reader.read(); !part.done; part = await reader.read()) seen += part.value;
		// The SDK reads this stream too (above); here the frames come from the one SSE parser.
		const text = parseText(seen)
			.filter((frame) => frame.data.startsWith("{"))
			.map((frame) => JSON.parse(frame.data).choices[0]?.delta.content ?? "")
			.join("");
		expect(text).toBe("The command finished. Output:\nBlocked by the permission gate (Block)");
		expect(seen.endsWith("data: [DONE]\n\n")).toBe(true);
	});
});

describe("OpenAI's Responses API through the SDK", () => {
	const sessionOf = (id: string) => /^resp_(ses_[^.]+)\./.exec(id)?.[1] as string;

	it("goes on in the same pi session with previous_response_id, and GET answers the response", async () => {
		const alice = client(keys.alice);
		const first = await alice.responses.create({ model: demo, input: "echo: one", instructions: "Be brief." });
		expect(first).toMatchObject({ object: "response", status: "completed", output_text: "one", model: demo });
		expect(first.usage?.output_tokens).toBeGreaterThan(0);
		const second = await alice.responses.create({ model: demo, input: "echo: two", previous_response_id: first.id });
		expect(second.output_text).toBe("two");
		expect(sessionOf(second.id)).toBe(sessionOf(first.id));
		// One pi session holds both turns: the REST API shows the conversation.
		const { body } = await gw.api(`/v1/sessions/${sessionOf(first.id)}/messages`, { headers: as(keys.alice) });
		const said = body.messages
			.filter((m: { role: string }) => m.role === "user")
			.map((m: { content: { text: string }[] }) => m.content[0]?.text);
		expect(said).toEqual(["echo: one", "echo: two"]);
		expect(await alice.responses.retrieve(first.id)).toMatchObject({ id: first.id, output_text: "one" });
	});

	it("streams OpenAI's events with sequence numbers; the SDK's stream helper reads them", async () => {
		const stream = await client().responses.create({ model: demo, input: "count: 3", stream: true });
		const events = [];
		for await (const event of stream) events.push(event);
		expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
		expect(events.map((e) => e.type)).toEqual([
			"response.created",
			"response.in_progress",
			"response.output_item.added",
			"response.content_part.added",
			"response.output_text.delta",
			"response.output_text.delta",
			"response.output_text.delta",
			"response.output_text.done",
			"response.content_part.done",
			"response.output_item.done",
			"response.completed",
		]);
		const helper = client().responses.stream({ model: demo, input: "echo: streamed" });
		expect((await helper.finalResponse()).output_text).toBe("streamed");
	});

	it("answers function calls with function_call_output; text.format json_schema and max_output_tokens map", async () => {
		const tools = [{ type: "function" as const, name: "lookup_price", parameters: { type: "object" }, strict: false }];
		const asked = await client().responses.create({ model: demo, input: 'tool: lookup_price {"sku": "R-1"}', tools });
		const call = asked.output.find((item) => item.type === "function_call");
		expect(call).toMatchObject({ name: "lookup_price", arguments: '{"sku":"R-1"}' });
		const answered = await client().responses.create({
			model: demo,
			previous_response_id: asked.id,
			input: [{ type: "function_call_output", call_id: (call as { call_id: string }).call_id, output: "7 EUR" }],
		});
		expect(answered.output_text).toBe("7 EUR");
		const shaped = await client().responses.create({
			model: demo,
			input: 'echo: {"n": 7}',
			text: { format: { type: "json_schema", name: "n", schema: { type: "object", required: ["n"] } } },
		});
		expect(JSON.parse(shaped.output_text)).toEqual({ n: 7 });
		const cut = await client().responses.create({ model: demo, input: "count: 40", max_output_tokens: 4 });
		expect(cut).toMatchObject({
			status: "incomplete",
			output_text: "1 2 3 4",
			incomplete_details: { reason: "max_output_tokens" },
		});
	});

	it("keeps principals apart: bob gets 404 for alice's response and cannot continue it", async () => {
		const hers = await client(keys.alice).responses.create({ model: demo, input: "echo: hers" });
		const bob = client(keys.bob);
		const got = await bob.responses.retrieve(hers.id).then(
			() => undefined,
			(error: unknown) => error,
		);
		expect(got).toBeInstanceOf(OpenAI.NotFoundError);
		expect(got).toMatchObject({ code: "response_not_found" });
		const continued = await bob.responses
			.create({ model: demo, input: "echo: his", previous_response_id: hers.id })
			.then(
				() => undefined,
				(error: unknown) => error,
			);
		expect(continued).toBeInstanceOf(OpenAI.NotFoundError);
		expect(continued).toMatchObject({ code: "previous_response_not_found", param: "previous_response_id" });
		const { body } = await gw.api(`/v1/sessions/${sessionOf(hers.id)}/messages`, { headers: as(keys.alice) });
		expect(body.messages.filter((m: { role: string }) => m.role === "user")).toHaveLength(1);
	});
});

// The Python `openai` package, unchanged, from the wheels pip finds on these machines (PyPI itself is
// not reachable: --retries 0 keeps pip from waiting on it), in a venv of its own.
const python = `
import json, sys
from openai import OpenAI, NotFoundError
client = OpenAI(base_url=sys.argv[1] + "/v1", api_key=sys.argv[2], max_retries=0)
out = {"models": [m.id for m in client.models.list()]}
done = client.chat.completions.create(model="pi-gateway-demo/demo", messages=[{"role": "user", "content": "echo: from python"}])
out["text"] = done.choices[0].message.content
stream = client.chat.completions.create(model="demo", messages=[{"role": "user", "content": "count: 3"}], stream=True)
out["streamed"] = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
tools = [{"type": "function", "function": {"name": "lookup_price", "parameters": {"type": "object"}}}]
messages = [{"role": "user", "content": 'tool: lookup_price {"sku": "P-3"}'}]
first = client.chat.completions.create(model="pi-gateway-demo/demo", messages=messages, tools=tools)
call = first.choices[0].message.tool_calls[0]
messages += [first.choices[0].message.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": call.id, "content": "3 EUR"}]
out["tool"] = [call.function.name, call.function.arguments, client.chat.completions.create(model="pi-gateway-demo/demo", messages=messages, tools=tools).choices[0].message.content]
try:
    client.chat.completions.create(model="no-such-model", messages=[{"role": "user", "content": "hi"}])
except NotFoundError as error:
    out["error"] = [error.status_code, error.code, error.param]
first = client.responses.create(model="pi-gateway-demo/demo", input="echo: r1")
out["responses"] = [first.output_text, client.responses.create(model="pi-gateway-demo/demo", input="echo: r2", previous_response_id=first.id).output_text]
print(json.dumps(out))
`;

describe("OpenAI's Python SDK against the gateway", () => {
	const run = promisify(execFile);
	let venv: string;
	beforeAll(async () => {
		venv = join(dir, "venv");
		await run("python3", ["-m", "venv", venv]);
		await run(join(venv, "bin/pip"), ["install", "-q", "--retries", "0", "openai"], { timeout: 170_000 });
	}, 180_000);

	it("lists models, completes, streams, round-trips a tool and raises NotFoundError", async () => {
		const script = join(dir, "client.py");
		writeFileSync(script, python);
		const { stdout } = await run(join(venv, "bin/python"), [script, gw.url, keys.alice as string], { timeout: 60_000 });
		expect(JSON.parse(stdout)).toEqual({
			models: [demo],
			text: "from python",
			streamed: "1 2 3",
			tool: ["lookup_price", '{"sku":"P-3"}', "3 EUR"],
			error: [404, "model_not_found", "model"],
			responses: ["r1", "r2"],
		});
	}, 60_000);
});
