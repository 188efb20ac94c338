import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { isAbsolute, join } from "node:path";
import fc from "fast-check";
import pino from "pino";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type App, createApp } from "../../src/app/app.ts";
import { parseConfig } from "../../src/config/config.ts";
import { type CommandType, commandFields } from "../../src/pi/protocol.ts";
import { SessionRegistry } from "../../src/sessions/registry/registry.ts";
import { isInside } from "../../src/shared/paths.ts";
import { sqliteSessions } from "../../src/store/sqlite/sessions.ts";
import { fixtures } from "../helpers/gateway.ts";
import { type Document, errorCode, errorMediaType } from "../helpers/method-matrix.ts";

// Property test: random methods, paths, queries, headers and bodies against every route of the
// in-process app (app.request: no sockets, so thousands of cases stay fast). The "pi" is a stub
// that records every line it receives; afterwards each line must be a command pi would accept.
const token = "fuzz-token-0123456789";
let root: string;
let record: string;
let app: App;
let registry: SessionRegistry;
let id: string;
let operations: [string, string][];
let document: Document;

beforeAll(async () => {
	root = mkdtempSync(join(tmpdir(), "pi-gateway-fuzz-"));
	mkdirSync(join(root, "workspace"));
	record = join(root, "stdin.jsonl");
	writeFileSync(record, "");
	const config = parseConfig({
		token,
		workspaceRoot: join(root, "workspace"),
		dataDir: join(root, "data"),
		piCommand: [process.execPath, join(fixtures, "stub-pi.mjs"), "ok", `record=${record}`],
		// The stub records what reaches it in a file under /tmp, which a sandbox would hide: this test
		// is about the guard in front of pi, not the sandbox around it.
		sandbox: "off",
		maxSessions: 3,
		maxBodyBytes: 16 * 1024,
		maxImageBytes: 64,
		commandTimeoutMs: 2000,
		logLevel: "silent",
	});
	const logger = pino({ level: "silent" });
	registry = new SessionRegistry(config, logger, sqliteSessions(config.dataDir));
	app = createApp(config, registry, logger);
	const created = await app.request("/v1/sessions", {
		method: "POST",
		headers: { authorization: `Bearer ${token}`, host: "localhost", "content-type": "application/json" },
		body: "{}",
	});
	id = ((await created.json()) as { id: string }).id;
	const doc = (await (await app.request("/openapi.json", { headers: auth })).json()) as Document;
	document = doc;
	operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
		Object.keys(ops).map((m) => [m.toUpperCase(), path] as [string, string]),
	);
});
afterAll(async () => {
	await registry?.shutdown();
	rmSync(root, { recursive: true, force: true });
});
const auth = { authorization: `Bearer ${token}`, host: "localhost" };

const mostly = <T>(usual: T, other: fc.Arbitrary<T>) => fc.oneof({ arbitrary: fc.constant(usual), weight: 9 }, other);
const text = fc.oneof(fc.string(), fc.string({ unit: "grapheme" }), fc.constantFrom("", "..", "/", "%00", "\u2028"));
// Paths that exist outside the roots (/etc/passwd, /tmp), inside them (".", the data dir), missing, or odd.
const pathFields = fc.constantFrom(".", "../..", "/etc/passwd", "/tmp", "out.html", "a/b/c.html", "", "\u0000", "DATA");
const image = fc.record({
	type: fc.constantFrom("image", "text"),
	data: fc.oneof(fc.base64String({ maxLength: 200 }), text),
	mimeType: fc.constantFrom("image/png", "text/plain", "image/"),
});
// Plausible bodies: zero to two known field names with right or wrong values (most routes take
// one or two fields, so this reaches pi often), besides arbitrary JSON and text.
const fieldValues: Record<string, fc.Arbitrary<unknown>> = {
	type: fc.oneof(fc.constantFrom(...(Object.keys(commandFields) as string[]), "extension_ui_response"), text),
	message: fc.oneof(text, fc.integer()),
	images: fc.array(image, { maxLength: 3 }),
	streamingBehavior: fc.constantFrom("steer", "followUp", "sideways"),
	outputPath: pathFields,
	sessionPath: pathFields,
	parentSession: pathFields,
	level: fc.constantFrom("off", "high", "huge"),
	mode: fc.constantFrom("all", "one-at-a-time", "some"),
	enabled: fc.oneof(fc.boolean(), text),
	name: text,
	command: text,
	provider: fc.constantFrom("stub", "--help", ""),
	modelId: text,
	entryId: text,
	id: text,
	cwd: pathFields,
	extensions: fc.array(text, { maxLength: 2 }),
	persist: fc.boolean(),
	confirmed: fc.boolean(),
	value: text,
};
const fields = fc
	.array(fc.oneof(...Object.entries(fieldValues).map(([k, arb]) => arb.map((v) => [k, v] as const))), { maxLength: 3 })
	.map((pairs) => Object.fromEntries(pairs));
// Raw commands that name paths or carry images, shaped to pass the schema, for /rpc (the least
// typed route): only the guard stands between these and pi.
const pathCommand = fc.oneof(
	fc.record({ type: fc.constant("export_html"), outputPath: pathFields }),
	fc.record({ type: fc.constant("switch_session"), sessionPath: pathFields }),
	fc.record({ type: fc.constant("new_session"), parentSession: pathFields }),
	fc.record({ type: fc.constantFrom("prompt", "steer", "follow_up"), message: fc.string(), images: fc.array(image) }),
);
const body = fc.oneof(
	{ arbitrary: fields.map((f) => JSON.stringify(f)), weight: 12 },
	{ arbitrary: pathCommand.map((c) => JSON.stringify(c)), weight: 4 },
	fc.json(),
	text,
	fc.constant(undefined),
	fc.constant("x".repeat(20_000)),
);
const query = fc.dictionary(
	fc.oneof(fc.constantFrom("after", "types", "since", "status", "ticket", "limit", "cursor", "wait"), text),
	fc.oneof(text, fc.constantFrom("0", "1", "-1", "true", "false", "1e3", "message_update,agent_settled")),
	{ maxKeys: 3 },
);
const headers = fc.record(
	{
		accept: fc.constantFrom("application/json", "text/event-stream", "*/*", "text/html"),
		"content-type": mostly("application/json", fc.constantFrom("text/plain", "application/json; charset=utf-8", "x/y")),
		prefer: fc.oneof(fc.constantFrom("wait", "wait=1", "wait=abc", "respond-async"), text),
		"last-event-id": fc.oneof(fc.constantFrom("0", "5", "-1", "999999999999"), text),
		"x-request-id": text,
		authorization: mostly(`Bearer ${token}`, text),
		host: mostly("localhost", fc.oneof(fc.constant("127.0.0.1:8787"), text)),
	},
	{ requiredKeys: ["authorization", "host", "content-type"] },
);
const request = fc.record({
	// -1: the raw /rpc route, picked more often than its share.
	operation: fc.oneof({ arbitrary: fc.integer({ min: 0, max: 1000 }), weight: 4 }, fc.constant(-1)),
	method: mostly<string | null>(null, fc.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS")),
	sessionId: mostly("REAL", fc.oneof(text, fc.constantFrom("ses_nope", "..", "%2e%2e"))),
	approvalId: fc.oneof(text, fc.constant("apr_1")),
	query,
	headers,
	body,
});

// Header values must be ByteStrings without CR/LF for the Request constructor: keep what it accepts.
const headerSafe = (value: string) => [...value].filter((ch) => ch >= " " && ch <= "~").join("");

it("no request, however malformed, gets a 5xx; every error is problem+json", { timeout: 60_000 }, async () => {
	let cases = 0;
	await fc.assert(
		fc.asyncProperty(request, async (r) => {
			cases++;
			const [defaultMethod, template] = (
				r.operation === -1 ? ["POST", "/v1/sessions/{id}/rpc"] : operations[r.operation % operations.length]
			) as [string, string];
			const method = r.method ?? defaultMethod;
			// Keep the one real session: deleting it would only make the rest of the run 404s.
			const sid = r.sessionId === "REAL" && method !== "DELETE" ? id : encodeURIComponent(r.sessionId);
			const path = template.replace("{id}", sid).replace("{approvalId}", encodeURIComponent(r.approvalId));
			// A long poll on the approvals inbox would only make the run slow.
			const q = new URLSearchParams(Object.entries(r.query).filter(([k, v]) => k !== "wait" || Number(v) < 0.1));
			const h = Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, headerSafe(v)]));
			const init: RequestInit = { method, headers: h };
			if (r.body !== undefined && method !== "GET" && method !== "OPTIONS") {
				init.body = r.body.replaceAll('"DATA"', JSON.stringify(join(root, "data", "gateway.db")));
			}
			const res = await app.request(`${path}${q.size > 0 ? `?${q}` : ""}`, init);
			if (res.headers.get("content-type")?.startsWith("text/event-stream")) await res.body?.cancel();
			expect(res.status, `${method} ${path}`).toBeLessThan(500);
			if (res.status >= 400) {
				// problem+json, or the error shape of the protocol the path speaks (OpenAI's), as it declares.
				const type = errorMediaType(document, template);
				expect(res.headers.get("content-type")).toBe(type);
				const body = await res.json();
				if (type === "application/problem+json") expect((body as { status: number }).status).toBe(res.status);
				expect(errorCode(body)).toMatch(/^[a-z_]+$/);
			} else if (!res.bodyUsed) await res.arrayBuffer();
		}),
		{ numRuns: 2500, seed: 20260201 },
	);
	expect(cases).toBe(2500);

	// Everything that reached "pi": argv of each start, then command lines.
	const lines = readFileSync(record, "utf8").split("\n").filter(Boolean);
	const commands = lines.map((line) => JSON.parse(line)).filter((c) => !("argv" in c));
	expect(commands.length).toBeGreaterThan(200);
	const roots = [join(root, "workspace"), join(root, "data", "pi-sessions")].map((r) => realpathSync(r));
	for (const command of commands) {
		expect(command.type).toMatch(/^[a-z][a-z0-9_]*$/);
		expect(command.id).toMatch(/^gw_[0-9a-z]+$/);
		expect(command.type).not.toBe("extension_ui_response");
		const { type, id: _id, ...rest } = command;
		const schema = commandFields[type as CommandType];
		if (schema) expect(schema.safeParse(rest).success, JSON.stringify(command)).toBe(true);
		for (const key of ["outputPath", "sessionPath", "parentSession"]) {
			if (rest[key] === undefined) continue;
			expect(isAbsolute(rest[key])).toBe(true);
			expect(
				roots.some((r) => isInside(r, rest[key])),
				rest[key],
			).toBe(true);
		}
		for (const img of rest.images ?? []) expect(Buffer.from(img.data, "base64").length).toBeLessThanOrEqual(64);
	}
});
