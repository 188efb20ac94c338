import { execFile } from "node:child_process";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayError, PiGateway } from "../../src/client/index.ts";
import { noPool, startTestGateway, type TestGateway } from "../helpers/gateway.ts";

// Issue 31 items 2 and 3 from both first-party clients: outputSchema and limits go in, output,
// outputError and limit come back; a spent budget is the client's GatewayError. Real pi, the demo
// model, README's layout.
const run = promisify(execFile);
const pkg = resolve(import.meta.dirname, "../../clients/python");
const token = "client-structured-token-0123456789";
const schema = { type: "object", properties: { n: { type: "integer" } }, required: ["n"] };

let gw: TestGateway;
let client: PiGateway;
beforeAll(async () => {
	gw = await startTestGateway({ ...noPool, token });
	client = new PiGateway({ baseUrl: gw.url, token });
});
afterAll(() => gw?.stop());

describe("the TypeScript client", () => {
	it("passes outputSchema and limits and reads output, outputError and limit", async () => {
		const { id } = await client.createSession();
		const repaired = (await client.promptAndWait(id, {
			message: 'repair: {"n": 7}',
			outputSchema: schema,
		} as never)) as {
			output?: unknown;
			outputError?: unknown;
		};
		expect(repaired.output).toEqual({ n: 7 });
		expect(repaired.outputError).toBeUndefined();
		const failed = (await client.promptAndWait(id, { message: 'echo: {"n": "x"}', outputSchema: schema } as never)) as {
			output?: unknown;
			outputError?: { attempts: number };
		};
		expect(failed.output).toBeUndefined();
		expect(failed.outputError?.attempts).toBe(3);
		const limited = (await client.promptAndWait(id, {
			message: "slow: 100",
			limits: { maxDurationMs: 300 },
		} as never)) as { limit?: { kind: string; allowed: number } };
		expect(limited.limit).toMatchObject({ kind: "duration", allowed: 300 });
	});

	it("gets budget_exhausted as a GatewayError", async () => {
		const { id } = await client.createSession({ budget: { maxTokens: 5 } } as never);
		await client.promptAndWait(id, { message: "count: 10" });
		const error = await client.promptAndWait(id, { message: "echo: more" }).catch((e: unknown) => e);
		expect(error).toBeInstanceOf(GatewayError);
		expect((error as GatewayError).status).toBe(409);
		expect((error as GatewayError).code).toBe("budget_exhausted");
		const spent = await client.budget(id);
		expect(spent).toMatchObject({ maxTokens: 5, exhausted: "tokens" });
		const raised = await client.setBudget(id, { maxTokens: 100000 });
		expect(raised).toMatchObject({ maxTokens: 100000, exhausted: null });
		const again = (await client.promptAndWait(id, { message: "echo: again" })) as { text?: string };
		expect(again.text).toBe("again");
	});
});

describe("the Python client (sync)", () => {
	it("passes output_schema and limits and reads output, outputError and limit; budget helpers", async () => {
		const script = `
import json, sys
from pi_gateway import PiGateway, GatewayError
gw = PiGateway(sys.argv[1], token=sys.argv[2])
schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
sid = gw.create_session({"budget": {"maxTokens": 100000}})["id"]
out = {}
r = gw.prompt_and_wait(sid, 'repair: {"n": 7}', output_schema=schema)
out["output"] = r.get("output")
r = gw.prompt_and_wait(sid, 'echo: {"n": "x"}', output_schema=schema)
out["outputError"] = r.get("outputError")
r = gw.prompt_and_wait(sid, "slow: 100", limits={"maxDurationMs": 300})
out["limit"] = r.get("limit")
types = []
for ev in gw.prompt_stream(sid, 'repair: {"n": 8}', output_schema=schema):
    types.append(ev.type)
    if ev.type == "run_output":
        out["streamed"] = ev.get("output")
out["streamEnd"] = types[-2:]
out["budget"] = gw.budget(sid)
gw.set_budget(sid, max_tokens=1)
try:
    gw.prompt_and_wait(sid, "echo: more")
    out["refused"] = None
except GatewayError as e:
    out["refused"] = [e.status, e.code]
print(json.dumps(out))
`;
		const { stdout } = await run("python3", ["-c", script, gw.url, token], {
			env: { ...process.env, PYTHONPATH: join(pkg, "src") },
			timeout: 120_000,
		});
		const out = JSON.parse(stdout);
		expect(out.output).toEqual({ n: 7 });
		expect(out.outputError.attempts).toBe(3);
		expect(out.limit).toMatchObject({ kind: "duration", allowed: 300 });
		// The stream's last two events: the structured answer, then the run's end.
		expect(out.streamed).toEqual({ n: 8 });
		expect(out.streamEnd).toEqual(["run_output", "agent_settled"]);
		expect(out.budget).toMatchObject({ maxTokens: 100000, exhausted: null });
		expect(out.budget.usedTokens).toBeGreaterThan(0);
		expect(out.refused).toEqual([409, "budget_exhausted"]);
	});
});
