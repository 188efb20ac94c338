import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join, resolve } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { createApp } from "../../src/app/app.ts";
import { startGateway } from "../../src/app/server.ts";
import { parseConfig } from "../../src/config/config.ts";
import { bundledPiCli } from "../../src/sessions/process/spawn.ts";
import { SessionRegistry } from "../../src/sessions/registry/registry.ts";
import { sqliteSessions } from "../../src/store/sqlite/sessions.ts";
import { fixtures, startTestGateway, stdinRecord, type TestGateway } from "../helpers/gateway.ts";
import { gatewayEntry } from "../helpers/gateway-entry.ts";
import { errorCode, errorMediaType } from "../helpers/method-matrix.ts";
import { specPath } from "../helpers/openapi-validate.ts";
import { readFrames } from "../helpers/sse.ts";

// Real pi behind a stdin recorder (tee-pi.mjs), with a token: what is refused must never reach pi.
const token = "s3cret-token-0123456789";
let gw: TestGateway;
let id: string;
const record = stdinRecord("security");
let outside: string;
/** The session's own folder. */
let folder: string;
const sent = record.text;
const as = (auth: string | undefined): Record<string, string> => (auth ? { authorization: auth } : {});

beforeAll(async () => {
	gw = await startTestGateway({
		token,
		piCommand: [process.execPath, join(fixtures, "tee-pi.mjs"), record.path, bundledPiCli()],
		// The recorder runs where pi runs: in the sandbox, which must let it write its record.
		sandboxWritable: [record.path],
	});
	// Outside the workspace, reachable from inside it only through symlinks.
	outside = join(gw.root, "outside");
	mkdirSync(outside);
	writeFileSync(join(outside, "secret.jsonl"), "{}\n");
	id = await gw.session({ name: "sec" });
	// In the session's own folder (README's layout: <root>/<id>), where its relative paths start;
	// and in the root, where a create's `cwd` starts for the admin.
	folder = await gw.folder(id);
	for (const at of [folder, gw.workspace]) {
		symlinkSync(outside, join(at, "escape"));
		symlinkSync(join(outside, "secret.jsonl"), join(at, "secret.jsonl"));
	}
});
afterAll(() => gw?.stop());

describe("bearer token", () => {
	it("every route in the OpenAPI document answers 401 problem+json without it, and with a wrong one", async () => {
		const doc = (await gw.api("/openapi.json")).body;
		const operations = Object.entries(doc.paths as Record<string, object>).flatMap(([path, ops]) =>
			Object.keys(ops).map((method) => [
				method.toUpperCase(),
				path.replace("{id}", id).replace("{approvalId}", "apr_1"),
				path,
			]),
		);
		expect(operations.length).toBeGreaterThan(40);
		const open = ["/healthz", "/readyz"];
		for (const [method, path, template] of operations) {
			for (const auth of [undefined, "Bearer wrong-token-0123456789", `Basic ${token}`, token]) {
				const res = await fetch(gw.url + path, { method, headers: as(auth) });
				if (open.includes(path as string)) {
					expect(res.status, `${method} ${path}`).toBe(200);
					continue;
				}
				expect(res.status, `${method} ${path} ${auth}`).toBe(401);
				// problem+json, or the error shape of the protocol the path speaks (OpenAI's), as it declares.
				const type = errorMediaType(doc, template as string);
				expect(res.headers.get("content-type")).toBe(type);
				expect(res.headers.get("www-authenticate")).toBe('Bearer realm="pi-gateway"');
				const body = await res.json();
				if (type === "application/problem+json") expect(body).toMatchObject({ status: 401, code: "unauthorized" });
				else expect(errorCode(body)).toBe("unauthorized");
			}
		}
		for (const path of ["/nope", "/v1/sessions/ses_unknown", "/metrics"]) {
			expect((await fetch(gw.url + path)).status, path).toBe(401);
		}
		// The contract and its reference page are public (SDK generators fetch them); the API is not.
		for (const path of ["/openapi.yaml", "/openapi.json", "/docs"]) {
			expect((await fetch(gw.url + path)).status, path).toBe(200);
		}
		// The scheme is case-insensitive (RFC 9110), the token is not.
		expect((await fetch(`${gw.url}/v1/sessions`, { headers: as(`bearer ${token}`) })).status).toBe(200);
		expect((await fetch(`${gw.url}/v1/sessions`, { headers: as(`Bearer ${token.toUpperCase()}`) })).status).toBe(401);
	});

	it("a stream ticket opens that session's event stream, and nothing else", async () => {
		const issued = await gw.api(`/v1/sessions/${id}/events/ticket`, { method: "POST" });
		expect(issued.status).toBe(201);
		const { ticket, expiresAt, eventsUrl } = issued.body;
		expect(eventsUrl).toBe(`/v1/sessions/${id}/events?ticket=${ticket}`);
		expect(Date.parse(expiresAt) - Date.now()).toBeGreaterThan(50_000);
		const controller = new AbortController();
		const stream = await fetch(gw.url + eventsUrl, { signal: controller.signal });
		expect(stream.status).toBe(200);
		const first = (await readFrames(stream).next()).value;
		expect(first?.json).toMatchObject({ type: "stream_open", sessionId: id });
		controller.abort();
		const other = await gw.session({ persist: false });
		const refusals = [
			`/v1/sessions/${other}/events?ticket=${ticket}`,
			`/v1/sessions/${id}?ticket=${ticket}`,
			`/v1/sessions/${id}/messages?ticket=${ticket}`,
			`/v1/events?ticket=${ticket}`,
			// The last base64url character of a 32-byte MAC carries 4 bits (A, E, I, …): swap it for another of those.
			`/v1/sessions/${id}/events?ticket=${ticket.slice(0, -1)}${ticket.endsWith("A") ? "E" : "A"}`,
			`/v1/sessions/${id}/events?ticket=${(Date.now() + 3_600_000).toString(36)}.${ticket.split(".")[1]}`,
		];
		for (const path of refusals) {
			const res = await fetch(gw.url + path);
			expect(res.status, path).toBe(401);
		}
		expect((await fetch(`${gw.url}/v1/sessions/${id}/events?ticket=x`)).status).toBe(401);
		expect((await gw.api(`/v1/sessions/${other}`, { method: "DELETE" })).status).toBe(204);
	});
});

describe("host and origin", () => {
	const withHost = (host: string) =>
		new Promise<number>((done, fail) => {
			const url = new URL(`${gw.url}/healthz`);
			request({ host: url.hostname, port: url.port, path: "/healthz", headers: { host } }, (res) => {
				res.resume();
				done(res.statusCode ?? 0);
			})
				.on("error", fail)
				.end();
		});

	it("only loopback names pass the Host check (DNS rebinding)", async () => {
		const port = new URL(gw.url).port;
		for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, "[::1]", "localhost"])
			expect(await withHost(host)).toBe(200);
		for (const host of [`evil.example:${port}`, "attacker.test", "127.0.0.1.evil.example"]) {
			expect(await withHost(host), host).toBe(421);
		}
	});

	it("a ticket for GET /v1/events opens that stream only; the token itself is never read from a URL", async () => {
		const issued = await gw.api("/v1/events/ticket", { method: "POST" });
		expect(issued.status).toBe(201);
		const { ticket, eventsUrl } = issued.body;
		expect(eventsUrl).toBe(`/v1/events?ticket=${ticket}`);
		const controller = new AbortController();
		const stream = await fetch(gw.url + eventsUrl, { signal: controller.signal });
		expect(stream.status).toBe(200);
		expect((await readFrames(stream).next()).value?.json).toMatchObject({ type: "stream_open" });
		controller.abort();
		for (const path of [
			`/v1/sessions/${id}/events?ticket=${ticket}`,
			`/v1/sessions?ticket=${ticket}`,
			`/v1/events?token=${gw.config.token}`,
			`/v1/events?ticket=${gw.config.token}`,
			`/v1/events?access_token=${gw.config.token}`,
		]) {
			expect((await fetch(gw.url + path)).status, path).toBe(401);
		}
		expect((await fetch(`${gw.url}/v1/events/ticket?ticket=${ticket}`, { method: "POST" })).status).toBe(401);
	});

	it("CORS is off by default and answers only configured origins", async () => {
		const plain = await fetch(`${gw.url}/healthz`, { headers: { origin: "https://app.example" } });
		expect(plain.headers.get("access-control-allow-origin")).toBeNull();
		const config = parseConfig({ corsOrigins: ["https://app.example"], token, dataDir: join(gw.root, "cors") });
		const logger = pino({ level: "silent" });
		const app = createApp(config, new SessionRegistry(config, logger, sqliteSessions(config.dataDir)), logger);
		const preflight = (origin: string) =>
			app.request("/v1/sessions", {
				method: "OPTIONS",
				headers: { origin, host: "localhost", "access-control-request-method": "POST" },
			});
		const allowed = await preflight("https://app.example");
		expect(allowed.status).toBe(204);
		expect(allowed.headers.get("access-control-allow-origin")).toBe("https://app.example");
		const refused = await preflight("https://evil.example");
		expect(refused.headers.get("access-control-allow-origin")).toBeNull();
	});

	it("CORS exposes every response header the spec documents (and X-Request-Id) to browser JS", async () => {
		const spec = parse(readFileSync(specPath, "utf8")) as {
			paths: Record<string, Record<string, { responses?: Record<string, { headers?: Record<string, unknown> }> }>>;
		};
		const documented = new Set<string>(["x-request-id"]);
		for (const operations of Object.values(spec.paths))
			for (const operation of Object.values(operations))
				for (const response of Object.values(operation.responses ?? {}))
					for (const name of Object.keys(response.headers ?? {})) documented.add(name.toLowerCase());
		expect(documented).toContain("preference-applied");
		expect(documented).toContain("location");
		const config = parseConfig({ corsOrigins: ["https://app.example"], token, dataDir: join(gw.root, "cors-expose") });
		const logger = pino({ level: "silent" });
		const app = createApp(config, new SessionRegistry(config, logger, sqliteSessions(config.dataDir)), logger);
		const res = await app.request("/healthz", { headers: { origin: "https://app.example", host: "localhost" } });
		expect(res.headers.get("access-control-allow-origin")).toBe("https://app.example");
		const exposed = new Set(
			(res.headers.get("access-control-expose-headers") ?? "").split(",").map((h) => h.trim().toLowerCase()),
		);
		expect([...documented].filter((h) => !exposed.has(h))).toEqual([]);
	});

	it("beyond loopback, never without a token: one is generated, and --no-auth is refused", async () => {
		const lan = await startGateway({ host: "0.0.0.0", port: 0, dataDir: join(gw.root, "lan"), logLevel: "silent" });
		try {
			expect(lan.tokenSource).toMatchObject({ kind: "generated", path: join(gw.root, "lan", "token") });
			expect((await fetch(`http://127.0.0.1:${lan.port}/v1/sessions`)).status).toBe(401);
		} finally {
			await lan.close();
		}
		await expect(
			startGateway({ host: "0.0.0.0", port: 0, auth: false, dataDir: join(gw.root, "lan2") }),
		).rejects.toThrow("Refusing to listen on 0.0.0.0 with --no-auth: a token is required beyond loopback");
		const cli = spawnSync(process.execPath, [gatewayEntry, "--host", "0.0.0.0", "--no-auth"], {
			cwd: resolve(import.meta.dirname, "../.."),
			encoding: "utf8",
			env: { ...process.env, PI_GATEWAY_TOKEN: "", PI_GATEWAY_DATA_DIR: join(gw.root, "cli") },
		});
		expect(cli.status).toBe(2);
		expect(cli.stderr).toContain("Refusing to listen on 0.0.0.0 with --no-auth");
	});
});

describe("confinement: paths resolve (symlinks followed) inside the roots, else nothing reaches pi", () => {
	const post = (path: string, json: unknown) => gw.api(`/v1/sessions/${id}${path}`, { method: "POST", json });

	it("refuses cwd, outputPath, sessionPath and parentSession outside, on typed routes and /rpc", async () => {
		const since = record.mark();
		const cases: [string, unknown, number][] = [
			["/export-html", { outputPath: "escape/out.html" }, 403],
			["/export-html", { outputPath: "../out.html" }, 403],
			["/export-html", { outputPath: "missing/out.html" }, 400],
			// Session files: the session's own folder only (a symlink in the workspace to outside, here).
			["/switch", { sessionPath: join(folder, "secret.jsonl") }, 403],
			["/switch", { sessionPath: join(outside, "secret.jsonl") }, 403],
			["/switch", { sessionPath: join(gw.config.dataDir, "gateway.db") }, 403],
			["/new", { parentSession: join(folder, "escape/secret.jsonl") }, 403],
			["/new", { parentSession: "missing.jsonl" }, 400],
			["/rpc", { type: "export_html", outputPath: "/tmp/out.html" }, 403],
			["/rpc", { type: "switch_session", sessionPath: join(folder, "escape/secret.jsonl") }, 403],
			["/rpc", { type: "new_session", parentSession: "/etc/passwd" }, 403],
		];
		for (const [path, json, status] of cases) {
			const res = await post(path, json);
			expect(res.status, `${path} ${JSON.stringify(json)}`).toBe(status);
			const outside = JSON.stringify(json).includes("outputPath") ? "path_outside_root" : "session_file_not_own";
			expect(res.body.code).toBe(status === 403 ? outside : "path_not_found");
		}
		for (const cwd of ["escape", "..", "/", "missing"]) {
			const res = await gw.api("/v1/sessions", { method: "POST", json: { cwd } });
			expect(res.status, cwd).toBe(cwd === "missing" ? 400 : 403);
		}
		expect(since()).toEqual([]);
	});

	it("extensions only from the allow-list; CLI-bound strings are validated, and stay values", async () => {
		const count = (await gw.api("/v1/sessions")).body.sessions.length;
		const refused = await gw.api("/v1/sessions", { method: "POST", json: { extensions: ["../../evil.ts"] } });
		expect(refused.status).toBe(400);
		expect(refused.body).toMatchObject({ code: "extension_not_allowed" });
		for (const json of [
			{ name: "a\u0000b" },
			{ name: "line\nbreak" },
			{ systemPrompt: "x\u0000" },
			{ model: "--help" },
		]) {
			const res = await gw.api("/v1/sessions", { method: "POST", json });
			expect(res.status, JSON.stringify(json)).toBe(400);
			expect(res.body.code).toBe("invalid_input");
		}
		expect((await gw.api("/v1/sessions")).body.sessions.length).toBe(count);
		// A value that looks like a flag is still the value of the flag before it.
		const flagLike = await gw.api("/v1/sessions", {
			method: "POST",
			json: { name: "--help", appendSystemPrompt: "--version", persist: false },
		});
		expect(flagLike.status).toBe(201);
		expect(flagLike.body).toMatchObject({ name: "--help", status: "idle" });
		await gw.api(`/v1/sessions/${flagLike.body.id}`, { method: "DELETE" });
	});
});
