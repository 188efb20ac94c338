import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fixtures, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { frameReader } from "../helpers/raw-sse.ts";
import { collect, type Frame } from "../helpers/sse.ts";

// The gateway in front of the legacy pi (`@mariozechner/pi-coding-agent` 0.73.1, installed as the
// `pi-legacy` devDependency) with the same offline demo model: what it lacks is adapted or 501.
const legacyCli = resolve(import.meta.dirname, "../../node_modules/pi-legacy/dist/cli.js");
const gate = resolve(import.meta.dirname, "../../extensions/permission-gate.ts");

let gw: TestGateway;
let id: string;

beforeAll(async () => {
	gw = await startTestGateway({
		piCommand: [process.execPath, legacyCli],
		extensions: { gate, dialogs: join(fixtures, "extensions/dialogs.ts") },
	});
	id = await gw.session({ name: "legacy", persist: false, extensions: ["gate", "dialogs"] });
});
afterAll(() => gw?.stop());

const base = () => `/v1/sessions/${id}`;
const post = (path: string, json: unknown = {}, headers: Record<string, string> = {}) =>
	gw.api(`${base()}${path}`, { method: "POST", json, headers });
const idle = () => until(async () => (await gw.api(base())).body.status === "idle");
const deltas = (frames: Frame[]) =>
	frames
		.filter((f) => f.event === "message_update" && f.json.assistantMessageEvent.type === "text_delta")
		.map((f) => f.json.assistantMessageEvent.delta as string)
		.join("");

describe("pi 0.73 behind the gateway", () => {
	it("is detected from the package --pi-command runs", async () => {
		expect(gw.registry.dialect).toBe("legacy");
		expect((await gw.api("/v1/info")).body.piVersion).toBe("0.73.1");
		const { status, body } = await gw.api(base());
		expect(status).toBe(200);
		expect(body).toMatchObject({ status: "idle", model: { provider: "pi-gateway-demo", id: "demo" } });
	});

	it("prompt → 202 with a derived disposition → settles on agent_end", async () => {
		const res = await post("/prompt", { message: "hello legacy" });
		expect(res.status).toBe(202);
		expect(res.body.disposition).toBe("started");
		await idle();
		const text = await gw.api(`${base()}/last-assistant-text`);
		expect(text.body.text).toBe("Hello from the pi-gateway demo model. You said: hello legacy");
	});

	it("streams a run through a synthetic agent_settled, with delta-only message_update", async () => {
		const res = await gw.fetch(`${base()}/prompt`, {
			method: "POST",
			headers: { "content-type": "application/json", accept: "text/event-stream" },
			body: JSON.stringify({ message: "echo: streamed from 0.73" }),
		});
		expect(res.status).toBe(200);
		const frames = await collect(res); // ends on its own: the run settled
		expect(frames[1]?.json).toMatchObject({ type: "response", command: "prompt", data: { disposition: "started" } });
		expect(frames.at(-2)?.event).toBe("agent_end");
		expect(frames.at(-1)?.json).toEqual({ type: "agent_settled", aborted: false, synthetic: true });
		expect(deltas(frames)).toBe("streamed from 0.73");
		const updates = frames.filter((f) => f.event === "message_update");
		expect(updates.length).toBeGreaterThan(0);
		for (const update of updates) {
			expect(update.json.message).toBeUndefined();
			expect(update.json.assistantMessageEvent.partial).toBeUndefined();
		}
	});

	it("answers Prefer: wait after the synthetic agent_settled", async () => {
		const res = await post("/prompt", { message: "echo: waited" }, { prefer: "wait=30" });
		expect(res.status).toBe(200);
		expect(res.body).toMatchObject({ disposition: "started", text: "waited" });
	});

	it("runs bash", async () => {
		const res = await post("/bash", { command: "echo from-bash" });
		expect(res.status).toBe(200);
		expect(res.body).toMatchObject({ output: "from-bash\n", exitCode: 0, cancelled: false });
	});

	it("asks through the permission gate, and runs the command once allowed", async () => {
		const run = await post("/prompt", { message: "bash: rm -rf ./nothing-here" });
		expect(run.status).toBe(202);
		const pending = await until(async () => (await gw.api(`${base()}/approvals?status=pending`)).body.approvals[0]);
		expect(pending).toMatchObject({ method: "select", options: ["Allow", "Block"] });
		expect((await gw.api(base())).body.status).toBe("waiting");
		const answered = await post(`/approvals/${pending.id}`, { value: "Allow" });
		expect(answered.status).toBe(200);
		await idle();
		expect((await gw.api(`${base()}/last-assistant-text`)).body.text).toMatch(/^The command finished/);
	});

	it("an extension command's prompt is handled: its stream ends with pi's response", async () => {
		const res = await gw.fetch(`${base()}/prompt`, {
			method: "POST",
			headers: { "content-type": "application/json", accept: "text/event-stream" },
			body: JSON.stringify({ message: "/confirm" }),
		});
		const reader = frameReader(res);
		const requested = await reader.until((f) => f.event === "approval_requested");
		const approvalId = requested.json.approval.id;
		expect((await post(`/approvals/${approvalId}`, { confirmed: true })).status).toBe(200);
		const frames = await reader.rest();
		expect(frames.at(-1)?.json).toMatchObject({
			type: "response",
			command: "prompt",
			data: { disposition: "handled" },
		});
		expect(frames.some((f) => f.event === "agent_start")).toBe(false);
		await idle();
	});

	it("aborts a run mid-stream: the synthetic agent_settled says aborted", async () => {
		const res = await gw.fetch(`${base()}/prompt`, {
			method: "POST",
			headers: { "content-type": "application/json", accept: "text/event-stream" },
			body: JSON.stringify({ message: "slow: 200" }),
		});
		const reader = frameReader(res);
		await reader.until((f) => f.json?.assistantMessageEvent?.type === "text_delta");
		expect((await post("/abort")).status).toBe(204);
		const frames = await reader.rest();
		expect(frames.at(-1)?.json).toEqual({ type: "agent_settled", aborted: true, synthetic: true });
		await idle();
	});

	it("answers 501 not_supported_by_pi for a command 0.73 lacks, without asking pi", async () => {
		for (const path of ["/entries", "/tree", "/thinking-levels"]) {
			const res = await gw.api(`${base()}${path}`);
			expect(res.status).toBe(501);
			expect(res.res.headers.get("content-type")).toContain("application/problem+json");
			expect(res.body).toMatchObject({ status: 501, code: "not_supported_by_pi" });
		}
		const cleared = await post("/queue/clear");
		expect(cleared.status).toBe(501);
		const raw = await post("/rpc", { type: "get_tree" });
		expect(raw.status).toBe(501);
	});

	it("deletes the session and stops its pi", async () => {
		expect((await gw.api(base(), { method: "DELETE" })).status).toBe(204);
		expect((await gw.api(base())).status).toBe(404);
	});
});
