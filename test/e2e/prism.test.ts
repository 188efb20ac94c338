import { type ChildProcess, spawn } from "node:child_process";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { noPool, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { freePort } from "../helpers/host.ts";
import { OpenApiValidator } from "../helpers/openapi-validate.ts";
import { parseText } from "../helpers/sse.ts";

// Stoplight Prism as a contract proxy: every request of the main flow goes through
// `prism proxy openapi.yaml <gateway>`, which checks the request against the spec before passing
// it on and the gateway's answer after. Prism reports what disagrees in an `sl-violations`
// header; any violation fails the test. (With `--errors` Prism would replace a violating answer
// with a 500, which stops a flow mid-way; reading the header reports every one.)
//
// One thing Prism cannot judge: an SSE body. It has no notion of text/event-stream and validates
// the whole stream text against the item schema, so a streamed answer always "violates" its
// body. For those answers, and only for their body, this test does what Prism cannot: every
// frame's `data` must fit its documented event (the same schema SSE SDKs type the items with).

const repo = resolve(import.meta.dirname, "../..");
const token = "prism-test-token-0123456789";

let gw: TestGateway;
let prism: ChildProcess | undefined;
let base = "";
let prismLog = "";

beforeAll(async () => {
	gw = await startTestGateway({ ...noPool, token });
	const port = await freePort();
	prism = spawn(
		join(repo, "node_modules/.bin/prism"),
		["proxy", join(repo, "openapi.yaml"), gw.url, "--host", "127.0.0.1", "--port", String(port)],
		{ cwd: repo, env: { ...process.env, PATH: `${process.execPath.replace(/\/node$/, "")}:${process.env.PATH}` } },
	);
	prism.stdout?.on("data", (chunk) => {
		prismLog += chunk;
	});
	prism.stderr?.on("data", (chunk) => {
		prismLog += chunk;
	});
	// Prism reads and resolves the whole spec first: seconds on a busy machine.
	await until(() => prismLog.includes("Prism is listening") || prism?.exitCode !== null, 90_000);
	if (!prismLog.includes("Prism is listening")) throw new Error(`prism did not start:\n${prismLog}`);
	base = `http://127.0.0.1:${port}`;
}, 120_000);

afterAll(async () => {
	if (prism && prism.exitCode === null) {
		const exited = new Promise((r) => prism?.once("exit", r));
		prism.kill("SIGTERM");
		await exited;
	}
	await gw?.stop();
});

interface Seen {
	what: string;
	status: number;
	violations: { location: string[]; severity: string; code: string | number; message: string }[];
}
const seen: Seen[] = [];
const checker = new OpenApiValidator();
const frameProblems: string[] = [];

/** A request through Prism; records Prism's verdict and returns the answer (SSE bodies as frames). */
async function call(method: string, path: string, init: { json?: unknown; headers?: Record<string, string> } = {}) {
	const headers: Record<string, string> = { authorization: `Bearer ${token}`, ...init.headers };
	if (init.json !== undefined) headers["content-type"] = "application/json";
	const res = await fetch(base + path, {
		method,
		headers,
		body: init.json === undefined ? undefined : JSON.stringify(init.json),
	});
	const text = await res.text();
	const violations = JSON.parse(res.headers.get("sl-violations") ?? "[]") as Seen["violations"];
	const sse = (res.headers.get("content-type") ?? "").startsWith("text/event-stream");
	const frames = sse ? parseText(text) : [];
	for (const frame of frames) frameProblems.push(...checker.checkEvent(frame.event, frame.json));
	seen.push({
		what: `${method} ${path}`,
		status: res.status,
		// Prism's SSE blind spot (see the top of this file): the stream's body, and nothing else.
		violations: sse ? violations.filter((v) => v.location.join(".") !== "response.body") : violations,
	});
	let body: any = text;
	try {
		body = JSON.parse(text);
	} catch {}
	return { status: res.status, body, frames, headers: res.headers };
}

describe("Prism contract proxy in front of the main flow", () => {
	it("create, prompt (wait, stream), bash (JSON, stream), approvals, delete: no violation", async () => {
		expect((await call("GET", "/healthz", { headers: { authorization: "" } })).status).toBe(200);
		expect((await call("GET", "/readyz", { headers: { authorization: "" } })).status).toBe(200);
		expect((await call("GET", "/v1/info")).status).toBe(200);

		// The README's own request: Prism refused it while the name's pattern ended in `/u`.
		const created = await call("POST", "/v1/sessions", {
			json: { name: "walkthrough", extensions: ["permission-gate"] },
		});
		expect(created.status).toBe(201);
		const id: string = created.body.id;
		const s = `/v1/sessions/${id}`;
		expect((await call("GET", s)).body.status).toBe("idle");

		const waited = await call("POST", `${s}/prompt?wait=30`, { json: { message: "echo: Hello, pi!" } });
		expect([waited.status, waited.body.text]).toEqual([200, "Hello, pi!"]);
		const preferred = await call("POST", `${s}/prompt`, {
			json: { message: "echo: preferred" },
			headers: { prefer: "wait=30" },
		});
		expect([preferred.status, preferred.body.text]).toEqual([200, "preferred"]);

		const streamed = await call("POST", `${s}/prompt/stream`, { json: { message: "count: 3" } });
		expect(streamed.status).toBe(200);
		expect(streamed.frames.map((f) => f.event)).toContain("agent_settled");

		const bash = await call("POST", `${s}/bash`, { json: { command: "mkdir -p pi-gateway-scratch && echo made" } });
		expect([bash.status, bash.body.output]).toEqual([200, "made\n"]);
		const bashStream = await call("POST", `${s}/bash/stream`, { json: { command: "echo tick" } });
		expect(bashStream.frames.map((f) => f.event)).toContain("bash_execution_update");

		// A run held by the permission gate: Prism passes the stream on only once it ends, so the
		// approval is found through the inbox's long-poll (through Prism too) and answered.
		const held = call("POST", `${s}/prompt/stream`, {
			json: { message: "bash: rm -rf ./pi-gateway-scratch && echo removed" },
		});
		const approval = await until(async () => {
			const inbox = await call("GET", "/v1/approvals?status=pending&wait=10");
			return inbox.body.approvals?.find((a: { sessionId: string }) => a.sessionId === id);
		}, 30_000);
		expect((await call("GET", `${s}/approvals/${approval.id}`)).body.status).toBe("pending");
		expect((await call("GET", `${s}/approvals?status=pending`)).body.approvals).toHaveLength(1);
		const answered = await call("POST", `${s}/approvals/${approval.id}`, { json: { value: "Allow", by: "prism" } });
		expect(answered.body.status).toBe("answered");
		const run = await held;
		expect(run.frames.map((f) => f.event)).toEqual(expect.arrayContaining(["approval_requested", "agent_settled"]));
		expect((await call("GET", `${s}/last-assistant-text`)).body.text).toContain("removed");

		for (const path of ["/state", "/messages", "/stats", "/ui", "/entries", "/tree", "/models", "/slash-commands"]) {
			expect((await call("GET", s + path)).status, path).toBe(200);
		}
		// Bodies the spec now marks optional go through without one.
		expect((await call("POST", `${s}/new`)).status).toBe(200);
		expect((await call("GET", "/v1/sessions")).status).toBe(200);

		expect((await call("DELETE", s)).status).toBe(204);
		const gone = await call("GET", s);
		expect([gone.status, gone.body.code]).toEqual([404, "session_not_found"]);

		expect(seen.length).toBeGreaterThan(25);
		expect(
			seen.filter((r) => r.violations.length > 0),
			prismLog.slice(-4000),
		).toEqual([]);
		expect(frameProblems).toEqual([]);
	}, 120_000);
});
