import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { noPool, startTestGateway, type TestGateway } from "../helpers/gateway.ts";
import { collect } from "../helpers/sse.ts";

// Issue 31 item 2: outputSchema on a run, against real pi and the offline demo model, in README's
// layout (`npm start`, no flags). `echo: JSON` answers that JSON; `repair: JSON` answers without
// JSON first, then the JSON once the gateway's repair turn asks again.
let gw: TestGateway;

beforeAll(async () => {
	gw = await startTestGateway(noPool);
});
afterAll(() => gw?.stop());

const schema = {
	type: "object",
	properties: { city: { type: "string" }, population: { type: "integer", minimum: 0 } },
	required: ["city", "population"],
	additionalProperties: false,
};

const waited = (id: string, json: unknown, path = "prompt") =>
	gw.api(`/v1/sessions/${id}/${path}?wait=60`, { method: "POST", json });

describe("wait mode", () => {
	it("carries `output`, the validated value, when the first answer fits", async () => {
		const id = await gw.session();
		const answer = { city: "Lyon", population: 522250 };
		const { status, body } = await waited(id, { message: `echo: ${JSON.stringify(answer)}`, outputSchema: schema });
		expect(status).toBe(200);
		expect(body.output).toEqual(answer);
		expect(body).not.toHaveProperty("outputError");
		expect(JSON.parse(body.text)).toEqual(answer);
		// One answer, no repair: one user message (with the gateway's instruction) and one assistant message.
		expect(body.messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant"]);
		expect(JSON.stringify(body.messages[0].content)).toContain("[pi-gateway structured output]");
	});

	it("sends a repair turn when the answer holds no valid JSON, then carries the repaired value", async () => {
		const id = await gw.session();
		const answer = { city: "Graz", population: 291134 };
		const { status, body } = await waited(id, { message: `repair: ${JSON.stringify(answer)}`, outputSchema: schema });
		expect(status).toBe(200);
		expect(body.output).toEqual(answer);
		expect(body).not.toHaveProperty("outputError");
		// The repair turn is part of the run: the first answer, the gateway's repair prompt, the second answer.
		const roles = body.messages.map((m: { role: string }) => m.role);
		expect(roles).toEqual(["user", "assistant", "user", "assistant"]);
		expect(JSON.stringify(body.messages[2].content)).toContain("the answer held no JSON value");
		expect(body.aborted).toBe(false);
		// The run was one run: the session's state is idle and no second settle is left in the log.
		const settled = await gw.fetch(`/v1/sessions/${id}/events?after=0&types=agent_settled,run_output`, {
			headers: { accept: "text/event-stream" },
			signal: AbortSignal.timeout(2000),
		});
		const frames = await collect(settled, (f) => f.event === "agent_settled");
		expect(frames.filter((f) => f.event === "agent_settled")).toHaveLength(1);
		expect(frames.filter((f) => f.event === "run_output")).toHaveLength(1);
	});

	it("gives up after 2 repair turns with `outputError` (3 attempts) and no `output`", async () => {
		const id = await gw.session();
		const { status, body } = await waited(id, {
			message: `echo: ${JSON.stringify({ city: "Bern", population: "many" })}`,
			outputSchema: schema,
		});
		expect(status).toBe(200);
		expect(body).not.toHaveProperty("output");
		expect(body.outputError.attempts).toBe(3);
		expect(body.outputError.message).toContain("/population must be integer");
		expect(body.messages.filter((m: { role: string }) => m.role === "assistant")).toHaveLength(3);
	});

	it("takes outputSchema on a follow-up that joins a run: the run's last answer is read", async () => {
		const id = await gw.session();
		const answer = { city: "Oslo", population: 709037 };
		const started = await gw.api(`/v1/sessions/${id}/prompt`, { method: "POST", json: { message: "slow: 40" } });
		expect(started.body.disposition).toBe("started");
		const { status, body } = await waited(
			id,
			{ message: `echo: ${JSON.stringify(answer)}`, outputSchema: schema },
			"follow-up",
		);
		expect(status).toBe(200);
		expect(body.output).toEqual(answer);
	});
});

describe("an invalid schema", () => {
	it.each([
		["an unknown type", { type: "strin" }],
		["properties that are no object", { type: "object", properties: 5 }],
		["a $ref the gateway would have to fetch", { $ref: "https://example.com/schema.json" }],
		["a pattern that is not linear-time (lookahead)", { type: "string", pattern: "(?=a)a" }],
	])("is 400 invalid_output_schema before pi: %s", async (_, outputSchema) => {
		const id = await gw.session();
		const before = (await gw.api(`/v1/sessions/${id}`)).body.lastEventId;
		const res = await gw.fetch(`/v1/sessions/${id}/prompt?wait=10`, {
			method: "POST",
			headers: { "content-type": "application/json" },
			body: JSON.stringify({ message: "echo: {}", outputSchema }),
		});
		expect(res.status).toBe(400);
		expect(res.headers.get("content-type")).toContain("application/problem+json");
		const problem = (await res.json()) as { code: string };
		expect(problem.code).toBe("invalid_output_schema");
		// Nothing reached pi: no event was logged (a prompt logs at least pi's response).
		expect((await gw.api(`/v1/sessions/${id}`)).body.lastEventId).toBe(before);
	});

	it("is 400 when it is not an object at all", async () => {
		const id = await gw.session();
		const res = await gw.fetch(`/v1/sessions/${id}/prompt`, {
			method: "POST",
			headers: { "content-type": "application/json" },
			body: JSON.stringify({ message: "echo: {}", outputSchema: "object" }),
		});
		expect(res.status).toBe(400);
		expect(res.headers.get("content-type")).toContain("application/problem+json");
	});
});

describe("streams", () => {
	const streamed = async (path: string, json: unknown) => {
		const res = await gw.fetch(path, {
			method: "POST",
			headers: { accept: "text/event-stream", "content-type": "application/json" },
			body: JSON.stringify(json),
			signal: AbortSignal.timeout(30_000),
		});
		expect(res.status).toBe(200);
		return collect(res);
	};

	it("carry run_output {runId, output} right before agent_settled (Accept: text/event-stream)", async () => {
		const id = await gw.session();
		const answer = { city: "Turku", population: 201863 };
		const frames = await streamed(`/v1/sessions/${id}/prompt`, {
			message: `repair: ${JSON.stringify(answer)}`,
			outputSchema: schema,
		});
		const runId = frames[0]?.json.runId;
		const types = frames.map((f) => f.event);
		expect(types.at(-1)).toBe("agent_settled");
		expect(types.at(-2)).toBe("run_output");
		expect(types.filter((t) => t === "agent_settled")).toHaveLength(1);
		expect(frames.at(-2)?.json).toEqual({ type: "run_output", sessionId: id, runId, output: answer });
	});

	it("carry run_output {runId, error} on …/prompt/stream when no answer validates", async () => {
		const id = await gw.session();
		const frames = await streamed(`/v1/sessions/${id}/prompt/stream`, {
			message: "hello",
			outputSchema: schema,
		});
		const output = frames.find((f) => f.event === "run_output");
		expect(output?.json.error).toMatchObject({ attempts: 3 });
		expect(output?.json).not.toHaveProperty("output");
		expect(frames.at(-1)?.event).toBe("agent_settled");
	});
});
