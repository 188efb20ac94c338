import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { specFiles } from "../../scripts/openapi.ts";
import { type Json, operationsOf } from "../../src/http/transport/openapi-generators.ts";

// Issue 31 item 6: both published documents lint clean with the two linters people run on specs
// (spectral's `spectral:oas`, redocly's `recommended`; rules turned off only in .spectral.yaml and
// redocly.yaml, each with its reason), and say in words and examples what every part is.
const run = promisify(execFile);
const repo = resolve(import.meta.dirname, "../..");
const bin = (name: string) => join(repo, "node_modules/.bin", name);
const versions = ["3.1", "3.0"] as const;
const documents = Object.fromEntries(versions.map((v) => [v, parse(readFileSync(specFiles[v], "utf8"))])) as Record<
	(typeof versions)[number],
	Json
>;

/** What a linter printed, or its error's output when it exits non-zero (it does on findings). */
const output = (command: string, args: string[]) =>
	run(command, args, { cwd: repo, maxBuffer: 64 * 1024 * 1024 }).then(
		(r) => r.stdout,
		(e) => `${e.stdout ?? ""}${e.stderr ?? ""}`,
	);

describe.each(versions)("the %s document, linted", (version) => {
	const file = specFiles[version];

	it("has no spectral finding (spectral:oas, .spectral.yaml)", async () => {
		const text = await output(bin("spectral"), ["lint", "-r", ".spectral.yaml", "-f", "json", "--quiet", file]);
		const findings = JSON.parse(text.slice(text.indexOf("["))) as { code: string; path: string[]; message: string }[];
		expect(findings.map((f) => `${f.code} ${f.path.join(".")}: ${f.message}`)).toEqual([]);
	}, 180_000);

	it("has no redocly finding (recommended, redocly.yaml)", async () => {
		const text = await output(bin("redocly"), ["lint", "--config", "redocly.yaml", "--format", "json", file]);
		const report = JSON.parse(text.slice(text.indexOf("{"))) as {
			problems: { ruleId: string; message: string; location: { pointer: string }[] }[];
		};
		expect(report.problems.map((p) => `${p.ruleId} ${p.location[0]?.pointer}: ${p.message}`)).toEqual([]);
	}, 180_000);
});

/** Each schema object of a schema, with where it is; not inside examples, and `$ref`s not followed. */
function* schemaNodes(schema: Json, where: string): Generator<[string, Json]> {
	if (!schema || typeof schema !== "object") return;
	yield [where, schema];
	for (const [name, property] of Object.entries(schema.properties ?? {}))
		yield* schemaNodes(property, `${where}.${name}`);
	for (const union of ["allOf", "anyOf", "oneOf"])
		for (const [i, branch] of (schema[union] ?? []).entries()) yield* schemaNodes(branch, `${where}/${union}${i}`);
	yield* schemaNodes(schema.items, `${where}[]`);
	if (typeof schema.additionalProperties === "object") yield* schemaNodes(schema.additionalProperties, `${where}{}`);
}

/** A property is described by its own description, or by the component it refers to (which must have one). */
const described = (schema: Json) =>
	!!schema.description || !!schema.$ref || (schema.allOf?.length === 1 && !!schema.allOf[0].$ref);

describe.each(versions)("the %s document, in words and examples", (version) => {
	const doc = documents[version];
	const schemas: Record<string, Json> = doc.components.schemas;
	const operations = operationsOf(doc);
	const component = (schema: Json) => (schema?.$ref ? schemas[schema.$ref.split("/").pop()] : undefined);

	it("describes every operation, schema, property and parameter", () => {
		const missing: string[] = [];
		for (const { path, method, op } of operations) {
			if (!op.description) missing.push(`operation ${method} ${path}`);
			for (const p of op.parameters ?? []) if (!p.description) missing.push(`parameter ${method} ${path} ${p.name}`);
		}
		for (const [name, schema] of Object.entries(schemas)) {
			if (!schema.description) missing.push(`schema ${name}`);
			for (const [where, node] of schemaNodes(schema, name))
				for (const [property, value] of Object.entries((node.properties ?? {}) as Record<string, Json>))
					if (!described(value)) missing.push(`property ${where}.${property}`);
		}
		expect(missing).toEqual([]);
	});

	it.runIf(version === "3.1")("has an example on every JSON request body and every JSON 2xx answer", () => {
		const hasExample = (media: Json) =>
			media.example !== undefined ||
			media.examples !== undefined ||
			media.schema?.example !== undefined ||
			component(media.schema)?.example !== undefined;
		const missing: string[] = [];
		for (const { path, method, op } of operations) {
			for (const [type, media] of Object.entries((op.requestBody?.content ?? {}) as Record<string, Json>))
				if (type.includes("json") && !hasExample(media)) missing.push(`request ${method} ${path}`);
			for (const [status, response] of Object.entries(op.responses as Record<string, Json>))
				for (const [type, media] of Object.entries((response.content ?? {}) as Record<string, Json>))
					if (status.startsWith("2") && type.includes("json") && !hasExample(media))
						missing.push(`${status} ${method} ${path}`);
		}
		expect(missing).toEqual([]);
	});

	it("declares a 4xx answer on every operation that takes a credential or input (redocly's rule, minus the probes)", () => {
		for (const { path, method, op } of operations) {
			const public_ = op.security?.length === 0 && !op.parameters?.length && !op.requestBody;
			if (!public_)
				expect(
					Object.keys(op.responses).some((s) => s.startsWith("4")),
					`${method} ${path}`,
				).toBe(true);
		}
	});
});

// ajv-formats is CommonJS: under Node's ESM loader its default export is the module object.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
	ajv: Ajv2020,
) => Ajv2020;

/** As test/helpers/openapi-validate.ts reads the spec: an object that leaves `additionalProperties` unsaid is closed. */
function closeObjects(node: Json): void {
	if (!node || typeof node !== "object") return;
	if (node.type === "object" && node.properties && !("additionalProperties" in node)) node.additionalProperties = false;
	for (const [key, value] of Object.entries(node)) if (key !== "example" && key !== "examples") closeObjects(value);
}

describe("every example in openapi.yaml", () => {
	const doc = structuredClone(documents["3.1"]);
	closeObjects(doc);
	const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
	addFormats(ajv);
	ajv.addSchema(doc, "openapi.json");
	const pointer = (segments: string[]) => segments.map((s) => s.replaceAll("~", "~0").replaceAll("/", "~1")).join("/");

	/** Every `example` beside a schema (the schema itself, a media type's or a parameter's), with its schema's place. */
	const examples: { where: string; schemaAt: string; value: unknown }[] = [];
	const visit = (node: Json, path: string[]) => {
		if (!node || typeof node !== "object") return;
		if (Array.isArray(node)) {
			for (const [i, item] of node.entries()) visit(item, [...path, String(i)]);
			return;
		}
		if ("example" in node && path.at(-1) !== "properties") {
			const schemaAt = node.schema ? [...path, "schema"] : path;
			examples.push({ where: path.join("/"), schemaAt: `openapi.json#/${pointer(schemaAt)}`, value: node.example });
		}
		for (const [key, value] of Object.entries(node))
			if (key !== "example" && key !== "examples") visit(value, [...path, key]);
	};
	visit(doc.components, ["components"]);
	visit(doc.paths, ["paths"]);

	it("is valid against its schema (the end-to-end conformance checks validate answers against the same)", () => {
		expect(examples.length).toBeGreaterThan(100);
		const invalid = examples.flatMap(({ where, schemaAt, value }) => {
			const validate = ajv.compile({ $ref: schemaAt });
			return validate(value) ? [] : [`${where}: ${ajv.errorsText(validate.errors)}`];
		});
		expect(invalid).toEqual([]);
	});
});
