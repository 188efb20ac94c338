import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { frameReader } from "../helpers/raw-sse.ts";
import { collect, type Frame } from "../helpers/sse.ts";

// The `…/stream` operations (typed as streams of StreamEvent for SDKs) answer what the plain paths
// answer to Accept: text/event-stream, with no Accept header at all; refusals stay HTTP errors.
let gw: TestGateway;
let id: string;

beforeAll(async () => {
	gw = await startTestGateway({ token: "stream-ops-token-0123456789" });
	id = await gw.session({ name: "stream-ops", persist: false });
});
afterAll(() => gw?.stop());

const post = (path: string, json: unknown, headers: Record<string, string> = {}) =>
	fetch(`${gw.url}/v1/sessions/${id}${path}`, {
		method: "POST",
		headers: { authorization: `Bearer ${gw.config.token}`, "content-type": "application/json", ...headers },
		body: JSON.stringify(json),
	});
const shape = (frames: Frame[]) => frames.map((f) => f.event);
const idle = () => until(async () => (await gw.api(`/v1/sessions/${id}`)).body.status === "idle");
const isDelta = (f: Frame) => f.json?.assistantMessageEvent?.type === "text_delta";

describe("POST …/stream operations", () => {
	it("prompt/stream streams the same run as Accept: text/event-stream on prompt", async () => {
		// pi's first run of a session adds a message of its own: compare two later runs.
		expect((await post("/prompt?wait=true", { message: "echo: warm" })).status).toBe(200);
		const res = await post("/prompt/stream", { message: "count: 3" });
		expect([res.status, res.headers.get("content-type")]).toEqual([200, "text/event-stream"]);
		const viaOperation = await collect(res);
		await idle();
		const viaAccept = await collect(await post("/prompt", { message: "count: 3" }, { accept: "text/event-stream" }));
		expect(shape(viaOperation)).toEqual(shape(viaAccept));
		expect(viaOperation.at(-1)?.json).toEqual({ type: "agent_settled", aborted: false });
		await idle();
	});

	it("bash/stream streams the command's output events, then pi's response", async () => {
		const frames = await collect(await post("/bash/stream", { command: "echo one; echo two" }));
		expect(frames[0]?.event).toBe("stream_open");
		expect(frames.slice(1, -1).every((f) => f.event === "bash_execution_update")).toBe(true);
		expect(frames.at(-1)?.json).toMatchObject({ type: "response", command: "bash", success: true });
		expect(frames.at(-1)?.json.data.output).toBe("one\ntwo\n");
	});

	it("steer/stream during a run ends with that run; a refused prompt/stream is a 409 problem, not a stream", async () => {
		const run = frameReader(await post("/prompt/stream", { message: "slow: 5" }));
		await run.until(isDelta);
		const refused = await gw.api(`/v1/sessions/${id}/prompt/stream`, { method: "POST", json: { message: "now" } });
		expect([refused.status, refused.body.code]).toEqual([409, "agent_busy"]);
		const steered = await collect(await post("/steer/stream", { message: "change course" }));
		expect(steered.find((f) => f.event === "response")?.json).toMatchObject({ command: "steer", success: true });
		expect(steered.at(-1)?.json).toMatchObject({ type: "agent_settled" });
		expect((await run.rest()).at(-1)?.json).toMatchObject({ type: "agent_settled" });
		await idle();
		const followed = await collect(await post("/follow-up/stream", { message: "later" }));
		expect(followed.find((f) => f.event === "response")?.json).toMatchObject({ command: "follow_up", success: true });
	});
});
