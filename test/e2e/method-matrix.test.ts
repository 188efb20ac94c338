import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { fixtures, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import {
	type Caller,
	callers,
	type Document,
	declares,
	errorCode,
	errorMediaType,
	expected,
	learnPublicPaths,
	mcpScoped,
	type Row,
	rows,
	sessionScoped,
	wrongScopeFor,
} from "../helpers/method-matrix.ts";
import { OpenApiValidator } from "../helpers/openapi-validate.ts";

// Issue 20, deliverable 2: every path of the gateway's own document × every method × every kind of
// caller, each outcome as the document declares it (DESIGN "Trust model": every method the router
// answers, HEAD included, passes the same scope, ownership, audit and limit checks as the operation
// it runs). A stub pi keeps it fast; afterwards no stream slot may be left behind.
let gw: TestGateway;
let dir: string;
let document: Document;
let validator: OpenApiValidator;
const keys: Record<string, string> = {};
const full = ["sessions:read", "sessions:write", "approvals:read", "approvals:answer"] as const;
const limits = { maxSubscribers: 3, maxEventStreams: 3 };

beforeAll(async () => {
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-matrix-"));
	const keysFile = join(dir, "keys.json");
	keys.alice = createKey(keysFile, "alice", [...full]).secret;
	keys.bob = createKey(keysFile, "bob", [...full]).secret;
	for (const scope of ["sessions:read", "approvals:answer"] as const)
		keys[`alice ${scope}`] = createKey(keysFile, "alice", [scope]).secret;
	gw = await startTestGateway({
		keysFile,
		piCommand: [process.execPath, join(fixtures, "stub-pi.mjs"), "ok"],
		...limits,
		logLevel: (process.env.MATRIX_LOG as never) ?? "silent",
	});
	document = (await (await fetch(`${gw.url}/openapi.json`)).json()) as Document;
	validator = new OpenApiValidator(JSON.stringify(document));
	learnPublicPaths(document);
});
afterAll(async () => {
	await gw?.stop();
	rmSync(dir, { recursive: true, force: true });
});

function credential(caller: Caller, row: Row): string | undefined {
	if (caller === "none") return undefined;
	if (caller === "admin") return gw.config.token;
	if (caller === "wrongScope") return keys[`alice ${wrongScopeFor(row.scope ?? "sessions:read")}`];
	return caller === "owner" ? keys.alice : keys.bob;
}

let alices = "";
/** Alice's session, made again when an earlier row (DELETE) ended it. */
async function aliceSession(): Promise<string> {
	const res = alices ? await gw.fetch(`/v1/sessions/${alices}`) : undefined;
	let status = "gone";
	if (res?.ok) status = ((await res.json()) as { status: string }).status;
	else await res?.body?.cancel();
	if (["gone", "exited", "crashed"].includes(status)) {
		const created = await fetch(`${gw.url}/v1/sessions`, {
			method: "POST",
			headers: { authorization: `Bearer ${keys.alice}`, "content-type": "application/json" },
			body: "{}",
		});
		alices = ((await created.json()) as { id: string }).id;
	}
	return alices;
}

let alicesMcp = "";
/** Alice's MCP session (opened with initialize), opened again when an earlier row (DELETE) ended it. */
async function aliceMcpSession(): Promise<string> {
	if (alicesMcp) return alicesMcp;
	const res = await fetch(`${gw.url}/mcp`, {
		method: "POST",
		headers: {
			authorization: `Bearer ${keys.alice}`,
			"content-type": "application/json",
			accept: "application/json, text/event-stream",
		},
		body: JSON.stringify({
			jsonrpc: "2.0",
			id: 1,
			method: "initialize",
			params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "matrix", version: "1" } },
		}),
	});
	await res.body?.cancel();
	alicesMcp = res.headers.get("mcp-session-id") ?? "";
	if (!alicesMcp) throw new Error(`initialize: ${res.status}`);
	return alicesMcp;
}

async function send(row: Row, caller: Caller) {
	const id = sessionScoped(row.template) ? await aliceSession() : "";
	const path = row.template.replace("{id}", id).replace(/\{[^}]+\}/g, "nope");
	const headers = new Headers();
	const secret = credential(caller, row);
	if (secret) headers.set("authorization", `Bearer ${secret}`);
	// An operation of an MCP session runs in alice's: hers to use, another principal's 404.
	if (mcpScoped(row.operation)) headers.set("mcp-session-id", await aliceMcpSession());
	const withBody = ["POST", "PUT", "PATCH"].includes(row.method);
	if (withBody) headers.set("content-type", "application/json");
	const res = await fetch(gw.url + path, { method: row.method, headers, body: withBody ? "{}" : undefined });
	if (mcpScoped(row.operation) && row.method === "DELETE" && res.ok) alicesMcp = "";
	const type = res.headers.get("content-type") ?? "";
	// A stream is left at its headers: the slot it took must come back when the client goes.
	if (type.startsWith("text/event-stream")) {
		await res.body?.cancel();
		return { res, path, body: undefined, text: "" };
	}
	const text = await res.text();
	let body: unknown = text;
	try {
		body = text ? JSON.parse(text) : undefined;
	} catch {}
	return { res, path, body, text };
}

/** Audit entries the matrix must have left, by "METHOD path principal" (every state-changing row with a credential). */
const audited = new Map<string, number>();
const principalOf: Record<Caller, string> = {
	none: "",
	wrongScope: "alice",
	otherOwner: "bob",
	owner: "alice",
	admin: "admin",
};

describe("method × principal matrix, from the served OpenAPI document", () => {
	it("every path × method × caller answers what the document declares", { timeout: 120_000 }, async () => {
		const failures: string[] = [];
		const getStatus = new Map<string, number>();
		let cases = 0;
		const all = rows(document);
		for (const row of all)
			for (const caller of callers) {
				cases++;
				const { res, path, body, text } = await send(row, caller);
				const where = `${row.method} ${row.template} as ${caller} → ${res.status}`;
				const want = expected(row, caller);
				const code = errorCode(body);
				if ("status" in want) {
					if (res.status !== want.status) failures.push(`${where}, expected ${want.status} ${text.slice(0, 120)}`);
					else if (want.code && row.method !== "HEAD" && code !== want.code) failures.push(`${where}: code ${code}`);
					if (want.allow && res.headers.get("allow") !== row.allow.join(", "))
						failures.push(`${where}: Allow ${res.headers.get("allow")}, expected ${row.allow.join(", ")}`);
				} else {
					if (!row.operation || !declares(row.operation, res.status) || want.notStatus.includes(res.status))
						failures.push(`${where}: not a declared outcome ${text.slice(0, 120)}`);
					if (want.notCode && code === want.notCode) failures.push(`${where}: ${want.notCode}`);
				}
				// problem+json, or the error shape of the protocol the path speaks (OpenAI's), as declared.
				const errorType = errorMediaType(document, row.template);
				if (res.status >= 400 && row.method !== "HEAD" && res.headers.get("content-type") !== errorType)
					failures.push(`${where}: ${res.headers.get("content-type")} is not ${errorType}`);
				if (row.operation && caller !== "none" && !["GET", "HEAD"].includes(row.method)) {
					const key = `${row.method} ${path} ${principalOf[caller]}`;
					audited.set(key, (audited.get(key) ?? 0) + 1);
				}
				if (row.method === "GET") getStatus.set(`${row.template} ${caller}`, res.status);
				if (row.method === "HEAD") {
					if (text !== "") failures.push(`${where}: HEAD answered a body`);
					const get = getStatus.get(`${row.template} ${caller}`);
					if (get !== undefined && get !== res.status) failures.push(`${where}: GET answered ${get}`);
				} else if (row.operation) {
					// Status and content type always; a 2xx body only where it is the gateway's own (the stub's
					// data is not pi's: e2e tests against real pi check those bodies).
					const mismatch = validator.check(row.method, path, res.status, res.headers.get("content-type"), body);
					const own = res.status >= 300 || !row.operation["x-pi-command"];
					failures.push(...mismatch.filter((m) => own || !m.includes(": body")).map((m) => `${where}: ${m}`));
				}
			}
		expect(failures).toEqual([]);
		// Figures for the note: every path × 7 methods × 5 callers.
		expect(cases).toBe(Object.keys(document.paths).length * 7 * callers.length);
		console.info(`method matrix: ${Object.keys(document.paths).length} paths × 7 methods × 5 callers = ${cases}`);
	});

	it("audits every state-changing row, denied ones too, and no HEAD, OPTIONS or refused method", async () => {
		const seen = new Map<string, number>();
		const methods = new Set<string>();
		let cursor: string | null = "";
		while (cursor !== null) {
			const page = await gw.fetch(`/v1/audit?limit=500${cursor ? `&cursor=${cursor}` : ""}`);
			const body = (await page.json()) as {
				entries: { path: string; principal: string; method: string }[];
				nextCursor: string | null;
			};
			for (const e of body.entries) {
				const key = `${e.method} ${e.path} ${e.principal}`;
				seen.set(key, (seen.get(key) ?? 0) + 1);
				methods.add(e.method);
			}
			cursor = body.nextCursor;
		}
		expect(audited.size).toBeGreaterThan(0);
		const missing = [...audited].filter(([key, count]) => (seen.get(key) ?? 0) < count);
		expect(missing).toEqual([]);
		// PATCH changes state too (a schedule's PATCH is the first operation of that method).
		expect([...methods].filter((m) => !["POST", "PUT", "PATCH", "DELETE"].includes(m))).toEqual([]);
	});

	it("leaves no stream slot behind: every subscriber slot opens again", async () => {
		const id = await aliceSession();
		const scrape = async () =>
			(await (await gw.fetch("/metrics")).text()).match(/^pi_gateway_sse_subscribers (\d+)/m)?.[1];
		await until(async () => (await scrape()) === "0");
		for (const path of [`/v1/sessions/${id}/events`, "/v1/events"]) {
			const open: Response[] = [];
			for (let i = 0; i < limits.maxSubscribers; i++) open.push(await gw.fetch(path));
			expect(
				open.map((r) => r.status),
				path,
			).toEqual(Array(limits.maxSubscribers).fill(200));
			await Promise.all(open.map((r) => r.body?.cancel()));
		}
	});
});

describe("malformed percent-escapes in a path (issue 20: 500s)", () => {
	it("answer 400 invalid_path problem+json for every caller and method, never 500", async () => {
		const id = await aliceSession();
		const paths = [
			"/v1/sessions/%ff",
			"/v1/sessions/%E0%A4%A",
			"/v1/sessions/%ff/messages",
			"/v1/sessions/%",
			`/v1/sessions/${id}%c0`,
		];
		for (const path of paths)
			for (const [method, secret] of [
				["GET", gw.config.token],
				["GET", keys.alice],
				["GET", undefined],
				["DELETE", gw.config.token],
				["POST", keys.alice],
			] as const) {
				const headers: Record<string, string> = secret ? { authorization: `Bearer ${secret}` } : {};
				const res = await fetch(gw.url + path, { method, headers });
				const where = `${method} ${path} ${secret ? "" : "without credential"}`;
				expect(res.status, where).toBe(400);
				expect(res.headers.get("content-type"), where).toBe("application/problem+json");
				expect(((await res.json()) as { code: string }).code, where).toBe("invalid_path");
			}
		// The session is untouched.
		expect((await gw.fetch(`/v1/sessions/${id}`)).status).toBe(200);
	});
});
