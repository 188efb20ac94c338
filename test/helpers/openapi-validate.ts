import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { parse } from "yaml";

/**
 * Response conformance: checks an HTTP answer against openapi.yaml, the checked-in spec that
 * SDKs are generated from. A status the operation does not declare, a content type it does
 * not list, or a JSON body its schema rejects is a lie in the spec (or a bug in the code).
 */

// ajv-formats is CommonJS: under Node's ESM loader its default export is the module object.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
	ajv: Ajv2020,
) => Ajv2020;

export const specPath = resolve(import.meta.dirname, "../../openapi.yaml");

type Responses = Record<string, { content?: Record<string, unknown> }>;
type Spec = { paths: Record<string, Record<string, { responses?: Responses }>> };

interface Template {
	path: string;
	pattern: RegExp;
	params: number;
}

const jsonTypes = new Set(["application/json", "application/problem+json"]);
const pointer = (...segments: string[]) =>
	segments.map((s) => `/${encodeURIComponent(s.replaceAll("~", "~0").replaceAll("/", "~1"))}`).join("");

/**
 * The gateway's own objects (z.object) leave `additionalProperties` unsaid; pi's pass-through
 * shapes (z.looseObject) say `{}`. Reading unsaid as closed makes a field the code sends but
 * the spec does not document fail too, while pi's newer fields still pass.
 */
function closeObjects(node: unknown): void {
	if (Array.isArray(node)) {
		for (const item of node) closeObjects(item);
		return;
	}
	if (typeof node !== "object" || node === null) return;
	const schema = node as Record<string, unknown>;
	if (schema.type === "object" && typeof schema.properties === "object" && !("additionalProperties" in schema)) {
		schema.additionalProperties = false;
	}
	for (const value of Object.values(schema)) closeObjects(value);
}

/**
 * The YAML parsed, through a JSON copy (node_modules/.cache) named by the text's hash: parsing the
 * 0.7 MB spec as YAML takes ≈ 0.4 s of CPU, and every test file that checks an answer needed it
 * (a suite's worth of test files, minutes of CPU); JSON.parse takes a few ms.
 */
function parsedSpec(text: string): unknown {
	// In the checkout, not the shared /tmp: a planted copy there would be the spec every answer is checked against.
	const folder = resolve(import.meta.dirname, "../../node_modules/.cache/pi-gateway-spec");
	mkdirSync(folder, { recursive: true });
	const cache = join(folder, `${createHash("sha256").update(text).digest("hex").slice(0, 32)}.json`);
	try {
		return JSON.parse(readFileSync(cache, "utf8"));
	} catch {}
	const spec = parse(text);
	// Written whole under another name first: a file reading it meanwhile never sees half of it.
	const partial = `${cache}.${process.pid}`;
	writeFileSync(partial, JSON.stringify(spec));
	renameSync(partial, cache);
	return spec;
}

export class OpenApiValidator {
	readonly spec: Spec;
	readonly #ajv: Ajv2020;
	readonly #templates: Template[];
	readonly #compiled = new Map<string, ValidateFunction>();

	constructor(text = readFileSync(specPath, "utf8")) {
		this.spec = parsedSpec(text) as Spec;
		closeObjects(this.spec);
		// OpenAPI adds keywords JSON Schema does not know (example, discriminator…): not strict.
		this.#ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
		addFormats(this.#ajv);
		this.#ajv.addSchema(this.spec as object, "openapi.json");
		this.#templates = Object.keys(this.spec.paths)
			.map((path) => ({
				path,
				pattern: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+")}$`),
				params: (path.match(/\{/g) ?? []).length,
			}))
			// A literal segment beats a parameter when both match.
			.sort((a, b) => a.params - b.params);
	}

	/** The spec's path template for a concrete path (query string ignored), if any. */
	template(path: string): string | undefined {
		const bare = path.split("?")[0] as string;
		if (this.spec.paths[bare]) return bare;
		return this.#templates.find((t) => t.pattern.test(bare))?.path;
	}

	/** Every way the answer disagrees with the spec; empty when it conforms. */
	check(method: string, path: string, status: number, contentType: string | null, body: unknown): string[] {
		const mediaType = (contentType ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
		const template = this.template(path);
		const operation = template ? this.spec.paths[template]?.[method.toLowerCase()] : undefined;
		const where = `${method.toUpperCase()} ${template ?? path} → ${status}`;
		if (!operation) {
			// Not an API operation (/docs, /openapi.json, an unknown route): only errors must be problems.
			if (mediaType === "application/problem+json") return this.#validate("#/components/schemas/Problem", body, where);
			if (template && status < 400) return [`${where}: the operation is not in openapi.yaml`];
			return [];
		}
		const key = [String(status), `${String(status)[0]}XX`, "default"].find((k) => operation.responses?.[k]);
		if (!key) return [`${where}: status ${status} is not declared`];
		const content = operation.responses?.[key]?.content;
		if (!content) {
			return body === undefined || body === "" ? [] : [`${where}: declares no body but one was sent`];
		}
		if (!(mediaType in content)) {
			return [
				`${where}: content type ${JSON.stringify(mediaType)} is not declared (${Object.keys(content).join(", ")})`,
			];
		}
		if (!jsonTypes.has(mediaType)) return [];
		return this.#validate(
			`#${pointer("paths", template as string, method.toLowerCase(), "responses", key, "content", mediaType, "schema")}`,
			body,
			where,
		);
	}

	/** An SSE frame: its `event:` must be documented (components/schemas/Event_<type>) and its data must fit. */
	checkEvent(event: string | undefined, data: unknown): string[] {
		const where = `event ${event}`;
		if (!event) return ["an SSE frame without an event: field"];
		const components = (this.spec as { components?: { schemas?: Record<string, unknown> } }).components;
		if (!components?.schemas?.[`Event_${event}`]) return [`${where}: not documented in openapi.yaml`];
		// Each Event_<type> pins `type` to its name, so data of another type fails here too.
		return this.#validate(`#/components/schemas/Event_${event}`, data, where);
	}

	#validate(ref: string, body: unknown, where: string): string[] {
		let validate = this.#compiled.get(ref);
		if (!validate) {
			validate = this.#ajv.getSchema(`openapi.json${ref}`);
			if (!validate) return [`${where}: no schema at ${ref}`];
			this.#compiled.set(ref, validate);
		}
		if (validate(body)) return [];
		return (validate.errors ?? []).map(
			(e) => `${where}: body${e.instancePath || ""} ${e.message ?? "is invalid"} ${JSON.stringify(e.params)}`,
		);
	}
}

let shared: OpenApiValidator | undefined;

/** Throws with every disagreement listed (and the body) when an answer does not match openapi.yaml. */
export function assertConforms(
	method: string,
	path: string,
	status: number,
	contentType: string | null,
	body: unknown,
): void {
	shared ??= new OpenApiValidator();
	const problems = shared.check(method, path, status, contentType, body);
	if (problems.length === 0) return;
	const shown = JSON.stringify(body)?.slice(0, 2000);
	throw new Error(`Response does not conform to openapi.yaml:\n  ${problems.join("\n  ")}\nbody: ${shown}`);
}
