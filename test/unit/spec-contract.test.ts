import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Ajv2020 } from "ajv/dist/2020.js";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { createApp } from "../../src/app/app.ts";
import { parseConfig } from "../../src/config/config.ts";
import { createKey, KeyStore } from "../../src/http/auth/keys.ts";
import { portablePattern } from "../../src/pi/patterns.ts";
import { SessionRegistry } from "../../src/sessions/registry/registry.ts";
import { sqliteSessions } from "../../src/store/sqlite/sessions.ts";
import { errorCode, errorMediaType } from "../helpers/method-matrix.ts";
import { OpenApiValidator } from "../helpers/openapi-validate.ts";

// What generators and validators read in openapi.yaml must be what the gateway does: patterns
// that compile, security that is enforced, request bodies as required as the gateway makes them,
// parameters typed as callers mean them. Each check drives the real app (no pi is started:
// every session path names a session that does not exist).

const repo = join(import.meta.dirname, "../..");
const spec = parse(readFileSync(join(repo, "openapi.yaml"), "utf8"));
const methods = ["get", "put", "post", "delete", "patch"];
const operations = Object.entries(spec.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
	Object.entries(item)
		.filter(([method]) => methods.includes(method))
		.map(([method, op]) => ({ path, method, op })),
);

const token = "spec-contract-token-0123456789";
const hasPython = (() => {
	try {
		execFileSync("python3", ["--version"], { stdio: "ignore" });
		return true;
	} catch {
		return false;
	}
})();
function app(keys?: KeyStore) {
	const config = parseConfig({ dataDir: join(tmpdir(), `pi-gateway-spec-contract-${process.pid}`), token });
	const logger = pino({ level: "silent" });
	const registry = new SessionRegistry(config, logger, sqliteSessions(config.dataDir));
	return Object.assign(createApp(config, registry, logger, undefined, { keys }), { registry });
}

/** Every node of the document with its JSON path, depth first. */
function* walk(node: unknown, at = "#"): Generator<[string, Record<string, any>]> {
	if (typeof node !== "object" || node === null) return;
	if (!Array.isArray(node)) yield [at, node as Record<string, any>];
	for (const [key, value] of Object.entries(node)) yield* walk(value, `${at}/${key}`);
}

/** A concrete URL for a path template: parameters become ids that name nothing. */
const concrete = (path: string) => path.replace(/\{[^}]+\}/g, "nothing_here");

describe("patterns", () => {
	const patterns = [...walk(spec)].filter(([, node]) => typeof node.pattern === "string");

	it("every pattern compiles as an ECMA-262 regex in u mode (no /flags suffix)", () => {
		expect(patterns.length).toBeGreaterThan(5);
		for (const [at, node] of patterns) {
			expect(() => new RegExp(node.pattern, "u"), `${at}: ${node.pattern}`).not.toThrow();
			expect(node.pattern, at).not.toMatch(/\/[a-z]*$/);
		}
	});

	it.skipIf(!hasPython)("every pattern also compiles with Python's re (a stdlib client's validator)", () => {
		const script = "import json, re, sys\nfor p in json.load(sys.stdin):\n    re.compile(p)\nprint('ok')";
		const result = spawnSync("python3", ["-c", script], { input: JSON.stringify(patterns.map(([, n]) => n.pattern)) });
		expect(`${result.stdout}${result.stderr}`).toBe("ok\n");
	});

	it("a spelled-out unicode class means what the zod regex does, on every code point", () => {
		const zod = /^[^\p{Cc}]*$/u;
		const spec = new RegExp(portablePattern(zod.source), "u");
		expect(spec.source).not.toContain("\\p");
		for (let cp = 0; cp <= 0x10ffff; cp++) {
			if (cp >= 0xd800 && cp <= 0xdfff) continue;
			const ch = String.fromCodePoint(cp);
			if (zod.test(ch) !== spec.test(ch)) expect.fail(`U+${cp.toString(16)}`);
		}
		expect(() => portablePattern("^[\\p{Lu}]$")).toThrow();
	});

	it("every pattern accepts the spec's own examples", () => {
		let checked = 0;
		for (const [at, node] of patterns) {
			const examples = [node.example, ...(node.examples ?? [])].filter((e) => typeof e === "string");
			for (const example of examples) {
				expect(new RegExp(node.pattern, "u").test(example), `${at}: ${example}`).toBe(true);
				checked++;
			}
		}
		expect(checked).toBeGreaterThan(0);
	});

	it("the request bodies shown in README.md, docs/ and the curl walkthrough fit their operation's schema", () => {
		const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
		ajv.addSchema(structuredClone(spec), "openapi.json");
		const locate = new OpenApiValidator();
		const docs = readdirSync(join(repo, "docs"))
			.filter((f) => f.endsWith(".md"))
			.map((f) => `docs/${f}`);
		const sources = ["README.md", ...docs, "examples/curl/walkthrough.sh", "examples/README.md"].map((f) =>
			readFileSync(join(repo, f), "utf8").replace(/\\\n/g, " "),
		);
		const bodies = sources.flatMap((text) =>
			text.split("\n").flatMap((line) => {
				const body = /(?:--json|-d) '(\{[^']*\})'/.exec(line)?.[1];
				const url = /\$GW(\/[^\s"'?]*)/.exec(line)?.[1];
				return body && url ? [{ body: body.replace(/'\$GATE'/g, "permission-gate"), url, line }] : [];
			}),
		);
		expect(bodies.length).toBeGreaterThan(8);
		for (const { body, url, line } of bodies) {
			const template = locate.template(url.replace(/\$\w+/g, "x"));
			expect(template, line).toBeTruthy();
			const method = /-X (PUT|PATCH)\b/.exec(line)?.[1]?.toLowerCase() ?? "post";
			const pointer = `#/paths/${(template as string).replaceAll("/", "~1")}/${method}/requestBody/content/application~1json/schema`;
			const validate = ajv.getSchema(`openapi.json${pointer}`);
			expect(validate, line).toBeTruthy();
			expect(validate?.(JSON.parse(body)), `${line}\n${JSON.stringify(validate?.errors)}`).toBe(true);
		}
	});
});

describe("security", () => {
	it("each operation's declared security is what the gateway enforces (401 without a token, or not)", async () => {
		const gateway = app();
		for (const { path, method, op } of operations) {
			const required = (op.security ?? spec.security).some((r: object) => Object.keys(r).length > 0);
			const res = await gateway.request(concrete(path), { method: method.toUpperCase() });
			expect(res.status === 401, `${method} ${path} declares ${required ? "bearer" : "no auth"}`).toBe(required);
		}
	});

	it("each operation's declared scope is what the gateway enforces (403 without it, never with it)", async () => {
		const dir = mkdtempSync(join(tmpdir(), "pi-gateway-scopes-"));
		const file = join(dir, "keys.json");
		const all = ["sessions:read", "sessions:write", "approvals:read", "approvals:answer"] as const;
		const only = new Map<string, string>();
		const without = new Map<string, string>();
		for (const scope of [...all, "admin"] as const) {
			only.set(scope, createKey(file, `only-${scope}`, [scope]).secret);
			without.set(scope, createKey(file, `without-${scope}`, all.filter((s) => s !== scope) as never).secret);
		}
		const gateway = app(new KeyStore(file, pino({ level: "silent" })));
		let checked = 0;
		for (const { path, method, op } of operations) {
			const declared = (op.security ?? spec.security)[0]?.bearer?.[0];
			if (declared === undefined) continue;
			const call = (key: string | undefined) =>
				gateway.request(concrete(path), { method: method.toUpperCase(), headers: { authorization: `Bearer ${key}` } });
			const denied = await call(without.get(declared));
			expect(denied.status, `${method} ${path} declares ${declared}, a key without it`).toBe(403);
			// problem+json, or the error shape of the protocol the path speaks (OpenAI's), as it declares.
			expect(denied.headers.get("content-type")).toContain(errorMediaType(spec, path));
			expect(errorCode(await denied.json())).toBe("insufficient_scope");
			const allowed = await call(only.get(declared));
			expect([401, 403], `${method} ${path} declares ${declared}, a key with only it`).not.toContain(allowed.status);
			checked++;
		}
		expect(checked).toBeGreaterThan(60);
		rmSync(dir, { recursive: true, force: true });
	});

	it("public routes say so with security: []", () => {
		for (const path of ["/healthz", "/readyz"]) expect(spec.paths[path].get.security, path).toEqual([]);
	});
});

describe("request bodies", () => {
	it("are required exactly when the gateway refuses a request without one", async () => {
		// A closing gateway creates no session, so an accepted empty body ends as 404 or 503, never in pi.
		const gateway = app();
		await gateway.registry.shutdown();
		let checked = 0;
		for (const { path, method, op } of operations) {
			if (!op.requestBody) continue;
			const res = await gateway.request(concrete(path), {
				method: method.toUpperCase(),
				headers: { authorization: `Bearer ${token}` },
			});
			// 415: a required body left out has no JSON content type either (see body-guard.ts).
			const refused = res.status === 400 || res.status === 415;
			expect(refused, `${method} ${path}: requestBody.required is ${op.requestBody.required}`).toBe(
				op.requestBody.required === true,
			);
			checked++;
		}
		expect(checked).toBeGreaterThan(15);
		for (const path of ["/new", "/compact", "/export-html"]) {
			expect(spec.paths[`/v1/sessions/{id}${path}`].post.requestBody.required, path).toBe(false);
		}
	});
});

describe("parameters", () => {
	const parameters = operations.flatMap(({ path, method, op }) =>
		(op.parameters ?? []).map((p: any) => ({ where: `${method} ${path} ${p.in} ${p.name}`, p })),
	);

	it("no query, path or header parameter is nullable (a URL cannot carry null)", () => {
		for (const { where, p } of parameters) {
			const types = [p.schema.type].flat();
			expect(types, where).not.toContain("null");
		}
	});

	it("`after` is an integer and `wait` is integer seconds (one type every generator can send)", () => {
		const after = parameters.filter(({ p }) => p.name === "after");
		const waits = parameters.filter(({ p }) => p.name === "wait" && p.in === "query");
		expect(after.length).toBeGreaterThan(0);
		expect(waits.length).toBeGreaterThanOrEqual(3);
		for (const { where, p } of after) expect(p.schema.type, where).toBe("integer");
		for (const { where, p } of waits.filter(({ where }) => !where.includes("/v1/approvals"))) {
			expect(p.schema.type, where).toBe("integer");
		}
	});

	it("`wait` keeps its wire format: true, false and seconds are accepted, anything else is a 400", async () => {
		const gateway = app();
		const prompt = async (query: string) =>
			(
				await gateway.request(`/v1/sessions/nothing_here/prompt?${query}`, {
					method: "POST",
					headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
					body: JSON.stringify({ message: "hi" }),
				})
			).status;
		for (const ok of ["wait=true", "wait=false", "wait=30", "wait=0"]) expect(await prompt(ok), ok).toBe(404);
		for (const bad of ["wait=yes", "wait=-1", "wait=1.5"]) expect(await prompt(bad), bad).toBe(400);
	});
});

describe("servers", () => {
	it("/openapi.json and /openapi.yaml name the origin they were fetched from", async () => {
		const gateway = app();
		const json = (await (await gateway.request("http://127.0.0.1:45123/openapi.json")).json()) as { servers: unknown };
		expect(json.servers).toEqual([{ url: "http://127.0.0.1:45123" }]);
		const yaml = parse(await (await gateway.request("http://localhost:9999/openapi.yaml")).text());
		expect(yaml.servers).toEqual([{ url: "http://localhost:9999" }]);
	});

	it("the checked-in openapi.yaml names the default address", () => {
		expect(spec.servers[0].url).toBe("http://127.0.0.1:8787");
	});
});
