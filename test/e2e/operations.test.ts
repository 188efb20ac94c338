import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app/app.ts";
import { ConfigSchema, parseConfig } from "../../src/config/config.ts";
import { Metrics } from "../../src/http/observability/prometheus.ts";
import { SessionRegistry } from "../../src/sessions/registry/registry.ts";
import { sqliteSessions } from "../../src/store/sqlite/sessions.ts";
import { startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { gatewayEntry } from "../helpers/gateway-entry.ts";
import { readFrames } from "../helpers/sse.ts";

// Operations: /metrics, /docs, request ids in answers and logs, and --help.
const repo = resolve(import.meta.dirname, "../..");
const token = "operations-test-token-0123";
const gatePath = join(repo, "examples/fixtures/confirm-gate.ts");

let gw: TestGateway;
beforeAll(async () => {
	// No warm pool: the process counts are the point here.
	gw = await startTestGateway({ token, extensions: { gate: gatePath }, warmPool: 0 });
});
afterAll(() => gw?.stop());

interface Sample {
	name: string;
	labels: Record<string, string>;
	value: number;
}

/** The exposition format's sample lines, parsed. */
function samples(text: string): Sample[] {
	return text
		.split("\n")
		.filter((line) => line && !line.startsWith("#"))
		.map((line) => {
			const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
			if (!match) throw new Error(`not a sample line: ${line}`);
			const labels = Object.fromEntries([...(match[2] ?? "").matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
			return { name: match[1] as string, labels, value: Number(match[3]) };
		});
}

async function scrape(): Promise<(name: string, labels?: Record<string, string>) => number | undefined> {
	const { status, body, res } = await gw.api("/metrics");
	expect(status).toBe(200);
	expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
	const all = samples(body);
	return (name, labels = {}) =>
		all.find(
			(s) =>
				s.name === name &&
				Object.keys(s.labels).length === Object.keys(labels).length &&
				Object.entries(labels).every(([k, v]) => s.labels[k] === v),
		)?.value;
}

describe("GET /metrics", () => {
	it("needs the token, and starts at zero", async () => {
		const res = await fetch(`${gw.url}/metrics`);
		expect(res.status).toBe(401);
		const m = await scrape();
		expect(m("pi_gateway_sessions", { status: "idle" })).toBe(0);
		expect(m("pi_gateway_pi_processes")).toBe(0);
		expect(m("pi_gateway_warm_pool_size")).toBe(0);
		expect(m("pi_gateway_pi_crashes_total")).toBe(0);
		expect(m("pi_gateway_approvals_resolved_total", { status: "answered" })).toBe(0);
		expect(m("process_cpu_user_seconds_total")).toBeGreaterThan(0);
		expect(m("nodejs_heap_size_total_bytes")).toBeGreaterThan(0);
	});

	it("counts sessions, commands by type and outcome, subscribers, approvals, crashes", async () => {
		const a = await gw.session({ extensions: ["gate"] });
		const b = await gw.session({});
		const post = (id: string, path: string, json: unknown) =>
			gw.api(`/v1/sessions/${id}${path}`, { method: "POST", json });

		expect((await post(a, "/prompt?wait=true", { message: "echo: hi" })).status).toBe(200);
		expect((await post(a, "/prompt", { message: "slow: 3" })).status).toBe(202);
		expect((await post(a, "/prompt", { message: "not now" })).status).toBe(409);
		expect((await post(a, "/prompt", {})).status).toBe(400); // never reached pi: not a command
		expect((await post(b, "/rpc", { type: "get_state" })).status).toBe(200);
		expect((await post(b, "/rpc", { type: "frobnicate_widget" })).status).toBe(422);
		await until(async () => (await gw.api(`/v1/sessions/${a}`)).body.status === "idle");

		// An open event stream is a subscriber until it closes.
		const stream = new AbortController();
		const res = await gw.fetch(`/v1/sessions/${b}/events`, {
			headers: { authorization: `Bearer ${token}` },
			signal: stream.signal,
		});
		const frames = readFrames(res);
		expect((await frames.next()).value?.event).toBe("stream_open");
		expect((await scrape())("pi_gateway_sse_subscribers")).toBe(1);
		stream.abort();
		await until(async () => (await scrape())("pi_gateway_sse_subscribers") === 0);

		// A dialog: pending, then answered.
		expect((await post(a, "/prompt", { message: "bash: rm -rf ./nothing-here" })).status).toBe(202);
		await until(async () => (await scrape())("pi_gateway_approvals_pending") === 1);
		let m = await scrape();
		expect(m("pi_gateway_sessions", { status: "waiting" })).toBe(1);
		expect(m("pi_gateway_sessions", { status: "idle" })).toBe(1);
		const [approval] = (await gw.api(`/v1/sessions/${a}/approvals?status=pending`)).body.approvals;
		expect((await post(a, `/approvals/${approval.id}`, { confirmed: false })).status).toBe(200);
		await until(async () => (await gw.api(`/v1/sessions/${a}`)).body.status === "idle");

		// A crash, and an orderly stop.
		gw.registry.get(b).kill("SIGKILL");
		await until(async () => (await gw.api(`/v1/sessions/${b}`)).body.status === "crashed");
		m = await scrape();
		expect(m("pi_gateway_pi_processes")).toBe(1);
		expect(m("pi_gateway_sessions", { status: "crashed" })).toBe(1);
		expect(m("pi_gateway_pi_crashes_total")).toBe(1);
		expect(m("pi_gateway_pi_exits_total", { reason: "crashed" })).toBe(1);
		expect((await gw.api(`/v1/sessions/${a}`, { method: "DELETE" })).status).toBe(204);
		expect((await gw.api(`/v1/sessions/${b}`, { method: "DELETE" })).status).toBe(204);

		m = await scrape();
		expect(m("pi_gateway_pi_processes")).toBe(0);
		expect(m("pi_gateway_pi_exits_total", { reason: "stopped" })).toBe(1);
		expect(m("pi_gateway_sessions", { status: "crashed" })).toBe(0);
		expect(m("pi_gateway_commands_total", { command: "prompt", outcome: "ok" })).toBe(3);
		expect(m("pi_gateway_commands_total", { command: "prompt", outcome: "agent_busy" })).toBe(1);
		expect(m("pi_gateway_commands_total", { command: "prompt", outcome: "invalid_input" })).toBeUndefined();
		expect(m("pi_gateway_commands_total", { command: "get_state", outcome: "ok" })).toBe(1);
		expect(m("pi_gateway_commands_total", { command: "other", outcome: "pi_refused" })).toBe(1);
		// The wait-mode prompt is a run, not a latency sample: 3 of the 4 prompts that reached pi.
		expect(m("pi_gateway_command_duration_seconds_count", { command: "prompt" })).toBe(3);
		expect(m("pi_gateway_approvals_requested_total")).toBe(1);
		expect(m("pi_gateway_approvals_resolved_total", { status: "answered" })).toBe(1);
		expect(m("pi_gateway_approvals_pending")).toBe(0);
		expect(m("pi_gateway_events_total", { type: "agent_settled" })).toBe(3);
		expect(m("pi_gateway_events_total", { type: "session_exit" })).toBe(2);
		expect(
			m("pi_gateway_http_requests_total", { method: "POST", route: "/v1/sessions/:id/prompt", status: "409" }),
		).toBe(1);
	});

	it("reads the warm pool's size from the source a pool registers", async () => {
		const config = parseConfig({ dataDir: mkdtempSync(join(tmpdir(), "metrics-")) });
		const logger = pino({ level: "silent" });
		const registry = new SessionRegistry(config, logger, sqliteSessions(config.dataDir));
		const metrics = new Metrics(registry);
		const app = createApp(config, registry, logger, metrics);
		metrics.setWarmPoolSource(() => 3);
		const text = await (await app.request("/metrics")).text();
		expect(samples(text).find((s) => s.name === "pi_gateway_warm_pool_size")?.value).toBe(3);
		rmSync(config.dataDir, { recursive: true });
	});
});

describe("GET /docs", () => {
	const dist = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));

	it("serves Swagger UI from local files, without a token, reading this gateway's /openapi.json", async () => {
		const bare = await fetch(`${gw.url}/docs`, { redirect: "manual" });
		expect(bare.status).toBe(301);
		expect(bare.headers.get("location")).toBe("docs/");
		const page = await fetch(`${gw.url}/docs/`);
		expect(page.status).toBe(200);
		expect(page.headers.get("content-type")).toBe("text/html; charset=UTF-8");
		const html = await page.text();
		const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
		expect(refs).toEqual([
			"./swagger-ui.css",
			"./favicon-32x32.png",
			"./favicon-16x16.png",
			"./swagger-ui-bundle.js",
			"./init.js",
		]);
		const types: Record<string, string> = {
			"./swagger-ui.css": "text/css; charset=utf-8",
			"./favicon-32x32.png": "image/png",
			"./favicon-16x16.png": "image/png",
			"./swagger-ui-bundle.js": "text/javascript; charset=utf-8",
			"./init.js": "text/javascript; charset=utf-8",
		};
		for (const ref of refs as string[]) {
			const asset = await fetch(new URL(ref, `${gw.url}/docs/`));
			expect(asset.status, ref).toBe(200);
			expect(asset.headers.get("content-type"), ref).toBe(types[ref]);
			const bytes = Buffer.from(await asset.arrayBuffer());
			if (ref !== "./init.js") expect(bytes.equals(readFileSync(join(dist, ref.slice(2)))), ref).toBe(true);
			else {
				// Offline: no validator badge (it posts the spec to validator.swagger.io), no absolute URLs.
				expect(bytes.toString()).toContain("validatorUrl: null");
				expect(bytes.toString()).toContain('fetch(root + "/openapi.json")');
				expect(bytes.toString()).not.toMatch(/https?:/);
			}
		}
		const spec = await fetch(`${gw.url}/openapi.json`);
		expect(spec.status).toBe(200);
		expect(((await spec.json()) as { openapi: string }).openapi).toBe("3.1.0");
	});

	it("serves nothing else of the package", async () => {
		expect((await fetch(`${gw.url}/docs/index.js`)).status).toBe(401);
		expect((await gw.api("/docs/index.js")).status).toBe(404);
		expect((await gw.api("/docs/swagger-ui-bundle.js.map")).status).toBe(404);
	});
});

describe("request ids", () => {
	it("echoes a sane X-Request-Id and puts it in problem+json `instance`", async () => {
		const res = await gw.api("/v1/sessions/ses_missing", { headers: { "x-request-id": "trace-42.a:b" } });
		expect(res.status).toBe(404);
		expect(res.res.headers.get("x-request-id")).toBe("trace-42.a:b");
		expect(res.body.instance).toBe("trace-42.a:b");
	});

	it("replaces an unusable one with a fresh UUID", async () => {
		const res = await gw.api("/v1/sessions/ses_missing", { headers: { "x-request-id": "has spaces\tand tabs" } });
		const id = res.res.headers.get("x-request-id");
		expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
		expect(res.body.instance).toBe(id);
	});

	it("logs it on the access line and on the error line of a 500, which hides the error", async () => {
		const lines: Record<string, unknown>[] = [];
		const logger = pino({ level: "info" }, { write: (line: string) => lines.push(JSON.parse(line)) });
		const config = parseConfig({ dataDir: mkdtempSync(join(tmpdir(), "request-id-")) });
		const app = createApp(config, new SessionRegistry(config, logger, sqliteSessions(config.dataDir)), logger);
		app.get("/boom", () => {
			throw new Error("secret internals");
		});
		const res = await app.request("/boom", { headers: { "x-request-id": "req-500" } });
		expect(res.status).toBe(500);
		expect(res.headers.get("content-type")).toBe("application/problem+json");
		expect(await res.json()).toEqual({
			type: "urn:pi-gateway:problem:internal_error",
			title: "Internal Server Error",
			status: 500,
			code: "internal_error",
			detail: "Internal error; the log has the details under this request id",
			instance: "req-500",
		});
		const error = lines.find((l) => l.msg === "unhandled error");
		expect(error).toMatchObject({ level: 50, requestId: "req-500", err: { message: "secret internals" } });
		const access = lines.find((l) => l.msg === "request");
		expect(access).toMatchObject({ requestId: "req-500", method: "GET", path: "/boom", status: 500 });
		rmSync(config.dataDir, { recursive: true });
	});
});

describe("pi-gateway --help", () => {
	it("documents every setting with its flag, environment variable and default", async () => {
		// src/main.ts, not bin/: the package test rebuilds dist/ (npm pack) while this file runs.
		const { stdout } = await promisify(execFile)(process.execPath, [gatewayEntry, "--help"]);
		const kebab = (key: string) => key.replace(/[A-Z]/g, (ch) => `-${ch.toLowerCase()}`);
		for (const key of Object.keys(ConfigSchema.shape)) {
			const flag = kebab(key);
			const env = `PI_GATEWAY_${flag.replaceAll("-", "_").toUpperCase()}`;
			const entry = new RegExp(
				// A secret with no flag of its own (argv is readable in /proc) is listed as `(no flag: …)`.
				`^  (?:--(?:\\[no-\\])?${flag}(?: <[^>]+>)?|\\(no flag: [^)]+\\))(?: +|\\n +)(\\S.*)\\n +env ${env}, config ${flag}:, default (\\S.*)$`,
				"m",
			).exec(stdout);
			expect(entry, `--${flag}`).not.toBeNull();
		}
		expect(stdout).toContain(`  --port <n>                        Port to listen on (0 picks a free one)
                                    env PI_GATEWAY_PORT, config port:, default 8787`);
		expect(stdout).toContain("env PI_GATEWAY_TOKEN, config token:, default none");
		expect(stdout).toContain('env PI_GATEWAY_HOST, config host:, default "127.0.0.1"');
		expect(stdout).toContain("  --extension <name=path>");
		expect(stdout).toContain("  -h, --help");
	});
});
