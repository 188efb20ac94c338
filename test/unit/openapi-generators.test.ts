import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import SwaggerParser from "@apidevtools/swagger-parser";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { generateSpec, specFiles } from "../../scripts/openapi.ts";
import { createApp } from "../../src/app/app.ts";
import { parseConfig } from "../../src/config/config.ts";
import { operationsOf, walk } from "../../src/http/transport/openapi-generators.ts";
import { SessionRegistry } from "../../src/sessions/registry/registry.ts";
import { sqliteSessions } from "../../src/store/sqlite/sessions.ts";

// Both published documents are written for SDK generators (issue 21): what each rule below
// prevents is what a generator made of the document before (see README "Clients").
const checkedIn = { "3.1": readFileSync(specFiles["3.1"], "utf8"), "3.0": readFileSync(specFiles["3.0"], "utf8") };
const documents = { "3.1": parse(checkedIn["3.1"]), "3.0": parse(checkedIn["3.0"]) };
const v30 = documents["3.0"];

describe("openapi-3.0.yaml", () => {
	it("is exactly what the route definitions generate (run `npm run spec` after changing routes)", async () => {
		expect(checkedIn["3.0"]).toBe(await generateSpec("3.0"));
	});

	it("is a valid OpenAPI 3.0.3 document with the 3.1 document's operations", async () => {
		const api = await SwaggerParser.validate(structuredClone(v30));
		expect((api as { openapi?: string }).openapi).toBe("3.0.3");
		const ids = (doc: object) => operationsOf(doc).map(({ path, method, op }) => `${method} ${path} ${op.operationId}`);
		expect(ids(v30)).toEqual(ids(documents["3.1"]));
	});

	it("says nothing only 3.1 can say: no type lists, null types, const, numeric exclusive bounds, webhooks", () => {
		expect(v30.webhooks).toBeUndefined();
		walk(v30, (node) => {
			expect(Array.isArray(node.type), JSON.stringify(node).slice(0, 120)).toBe(false);
			expect(node.type).not.toBe("null");
			expect(node).not.toHaveProperty("const");
			for (const bound of ["exclusiveMinimum", "exclusiveMaximum"])
				if (bound in node) expect(typeof node[bound]).toBe("boolean");
		});
	});

	it("declares bearer with empty scope lists, each operation's scope in x-required-scope and its description", () => {
		const scopes = new Map(
			operationsOf(documents["3.1"]).map(({ path, method, op }) => [
				`${method} ${path}`,
				op.security?.[0]?.bearer?.[0],
			]),
		);
		let scoped = 0;
		for (const { path, method, op } of operationsOf(v30)) {
			const where = `${method} ${path}`;
			if (op.security?.length === 0) continue;
			expect(op.security ?? v30.security, where).toEqual([{ bearer: [] }]);
			// An operation any credential may call (GET /v1/whoami) has no scope to name.
			expect(op["x-required-scope"], where).toBe(scopes.get(where));
			if (op["x-required-scope"] === undefined) continue;
			expect(op.description, where).toContain(`Requires the \`${op["x-required-scope"]}\` scope.`);
			scoped++;
		}
		expect(scoped).toBeGreaterThan(60);
	});

	it("lists no nullable property as required (swagger-codegen refuses None for a required one)", () => {
		walk(v30, (node) => {
			for (const name of node.properties && Array.isArray(node.required) ? node.required : [])
				expect(node.properties[name]?.nullable, name).not.toBe(true);
		});
		expect(v30.components.schemas.Session.properties.name).toMatchObject({ type: "string", nullable: true });
	});

	it("says a pending approval's null answer by a nullable component, not a `$ref` with siblings 3.0 ignores", () => {
		const answer = v30.components.schemas.Approval.properties.answer;
		expect(answer).toEqual({ $ref: "#/components/schemas/ApprovalAnswerObject" });
		expect(v30.components.schemas.ApprovalAnswerObject).toMatchObject({ type: "object", nullable: true });
		walk(v30, (node) => {
			if (typeof node.$ref === "string") expect(Object.keys(node), node.$ref).toEqual(["$ref"]);
		});
	});

	it("is served without a token at /openapi-3.0.json and /openapi-3.0.yaml, naming the origin it was fetched from", async () => {
		const config = parseConfig({ dataDir: join(tmpdir(), `pi-gateway-spec-30-${process.pid}`), token: "t".repeat(32) });
		const logger = pino({ level: "silent" });
		const app = createApp(config, new SessionRegistry(config, logger, sqliteSessions(config.dataDir)), logger);
		const json = await app.request("http://127.0.0.1:45123/openapi-3.0.json");
		expect(json.status).toBe(200);
		expect(((await json.json()) as { servers: unknown }).servers).toEqual([{ url: "http://127.0.0.1:45123" }]);
		const yaml = await app.request("http://localhost:9999/openapi-3.0.yaml");
		expect(yaml.headers.get("content-type")).toBe("application/yaml");
		const served = parse(await yaml.text());
		expect({ ...served, servers: v30.servers }).toEqual(v30);
	});

	it("has no anyOf/oneOf a 3.0 generator cannot name: only the discriminated StreamEvent", () => {
		walk(v30, (node) => {
			for (const union of ["anyOf", "oneOf"]) if (union in node) expect(node.discriminator, union).toBeDefined();
		});
	});
});

describe.each(["3.1", "3.0"] as const)("the %s document, for generators", (version) => {
	const doc = documents[version];
	const operations = operationsOf(doc);

	it("has no empty additionalProperties: {} (every event model became an empty map)", () => {
		walk(doc, (node) => {
			const extra = node.additionalProperties;
			if (extra && typeof extra === "object")
				expect(Object.keys(extra).length, JSON.stringify(node).slice(0, 80)).toBeGreaterThan(0);
		});
	});

	it("names every object request body and response in components (no IdPromptBody, InlineResponse200)", () => {
		for (const { path, method, op } of operations) {
			const media = [
				...Object.values(op.requestBody?.content ?? {}),
				...Object.values(op.responses as Record<string, any>).flatMap((r) => Object.values(r.content ?? {})),
			] as { schema?: { type?: string; $ref?: string; properties?: object } }[];
			for (const { schema } of media) if (schema?.properties) expect(schema.$ref, `${method} ${path}`).toBeDefined();
		}
	});

	it("gives every parameter one type (`wait` is integer seconds)", () => {
		for (const { path, method, op } of operations)
			for (const p of op.parameters ?? []) {
				const schema = p.schema.$ref ? doc.components.schemas[p.schema.$ref.split("/").pop()] : p.schema;
				expect(typeof schema.type, `${method} ${path} ${p.name}`).toBe("string");
			}
		for (const path of ["/v1/sessions/{id}/prompt", "/v1/approvals"]) {
			const op = doc.paths[path].post ?? doc.paths[path].get;
			const wait = op.parameters.find((p: any) => p.name === "wait");
			expect(wait.schema, path).toMatchObject({ type: "integer", minimum: 0 });
		}
	});

	it("names header parameters as HTTP writes them, as the response headers are", () => {
		const names = new Set<string>();
		for (const { op } of operations) {
			for (const p of op.parameters ?? []) if (p.in === "header") names.add(p.name);
			for (const response of Object.values(op.responses as Record<string, any>))
				for (const name of Object.keys(response.headers ?? {})) names.add(name);
		}
		expect(names).toContain("Last-Event-ID");
		expect(names).toContain("If-None-Match");
		for (const name of names) expect(name, name).toMatch(/^([A-Z][a-z]*|ID|ETag)(-([A-Z][a-z]*|ID))*$/);
	});

	it("declares 413 and 415 only where a request body can be too large or of the wrong type", () => {
		for (const { path, method, op } of operations) {
			if (op.requestBody) continue;
			expect(op.responses, `${method} ${path}`).not.toHaveProperty("415");
			// The archive's 413 is its own: a folder too large to send.
			if (path !== "/v1/sessions/{id}/archive") expect(op.responses, `${method} ${path}`).not.toHaveProperty("413");
		}
	});

	it("writes patterns without a JavaScript regex's needless escapes (openapi-zod-client copies them)", () => {
		walk(doc, (node) => {
			if (typeof node.pattern === "string") expect(node.pattern).not.toContain("\\/");
		});
		expect(doc.components.schemas.ImageContent.properties.mimeType.pattern).toBe("^image/[\\w.+-]+$");
	});

	it("has operationIds that are identifiers everywhere, and problem+json with Problem on every error", () => {
		for (const { path, method, op } of operations) {
			expect(op.operationId, `${method} ${path}`).toMatch(/^[a-z][a-zA-Z0-9]*$/);
			for (const [status, response] of Object.entries(op.responses as Record<string, any>))
				if (/^[45]/.test(status))
					expect(response.content["application/problem+json"].schema, `${method} ${path} ${status}`).toEqual({
						$ref: "#/components/schemas/Problem",
					});
		}
	});

	it("declares every event's fields, extension_ui_request's per-method ones among them", () => {
		const events = doc.components.schemas.StreamEvent.oneOf.map((e: { $ref: string }) => e.$ref.split("/").pop());
		expect(events.length).toBeGreaterThan(30);
		for (const name of events) expect(Object.keys(doc.components.schemas[name].properties), name).toContain("type");
		const ui = doc.components.schemas.Event_extension_ui_request.properties;
		for (const field of [
			"title",
			"message",
			"options",
			"placeholder",
			"prefill",
			"timeout",
			"notifyType",
			"statusKey",
			"widgetLines",
			"text",
		])
			expect(ui, field).toHaveProperty(field);
	});
});
