import { type Json, operationsOf, walk } from "./openapi-generators.ts";

/**
 * The OpenAPI 3.0.3 twin of the published 3.1 document (/openapi-3.0.json), for the many
 * generators that stop at 3.0 (swagger-codegen, kin-openapi, AutoRest, …). Same operations and
 * schemas; only what 3.0 cannot say is said another way:
 * - `type: [T, "null"]` and `anyOf: [..., {type: null}]` → `type: T` + `nullable: true`, and a
 *   nullable property is not listed in `required` (swagger-codegen's Python and Java models refuse
 *   `None` for a required property even when it is nullable: the gateway still always sends it);
 * - `const` → a one-value `enum`; a nullable enum lists `null` (3.0.3); numeric `exclusiveMinimum`/`exclusiveMaximum` → the 3.0 booleans;
 *   `examples` → `example`;
 * - an `anyOf`/`oneOf` without a discriminator, which 3.0 generators turn into types they never
 *   define: of objects → one object with every branch's properties (the description says which
 *   combinations the gateway takes); of anything else → a schema of any type;
 * - `additionalProperties: true` beside declared properties is left out (3.0's default, and
 *   swagger-codegen makes a map, not a model, of an object that declares it);
 * - a nullable `$ref` (3.0 ignores every sibling of a `$ref`, `nullable` included): where every
 *   reference to that component is nullable, the component says `nullable: true` and the
 *   references stay bare (`Approval.answer` → `ApprovalAnswerObject`, null while pending);
 *   otherwise `allOf: [$ref]` beside `nullable: true` and the target's `type`;
 * - an example that holds something else than an object where the twin says "any value" as
 *   `type: object` (below) is left out: 3.0 tools would call it invalid;
 * - an operation with JSON answers of different schemas under several 2xx statuses (a run command:
 *   200 `RunResult` when waited, 202 `RunAccepted`) declares one schema for all of them, merging
 *   theirs (`RunResultOrRunAccepted`): swagger-codegen and most 3.0 generators type an operation by
 *   its first 2xx answer and refused the other's body;
 * - bearer security with empty scope lists (3.0 allows scopes only for OAuth2 and OpenID Connect):
 *   the operation's scope is in `x-required-scope` and its description;
 * - `webhooks` (3.1 only) move to `x-webhooks`.
 */
export function toOpenApi30(published: Json): Json {
	const document = structuredClone(published);
	document.openapi = "3.0.3";
	if (document.webhooks) {
		if (Object.keys(document.webhooks).length > 0) document["x-webhooks"] = document.webhooks;
		delete document.webhooks;
	}
	delete document.jsonSchemaDialect;
	document.info = {
		...document.info,
		description:
			`${document.info?.description ?? ""}\n\nThe OpenAPI 3.0.3 twin of /openapi.json (3.1), for generators that stop at 3.0: the same operations and schemas; each operation's scope is in \`x-required-scope\` and its description.`.trim(),
	};

	walk(document.components ?? {}, downgrade);
	for (const { op } of operationsOf(document)) {
		walk(op, downgrade);
		if (op.security?.length) op.security = op.security.map((requirement: Json) => mapValues(requirement, () => []));
	}
	walk(document["x-webhooks"] ?? {}, downgrade);
	oneAnswerSchema(document);
	nullableReferences(document);
	const schemas = document.components?.schemas ?? {};
	walk(document, (node) => {
		if (node?.example !== undefined && !fitsStandIns(node.schema ?? node, node.example, schemas)) delete node.example;
	});
	return document;
}

/** See the module comment: one schema for an operation's 2xx JSON answers; components left unused go. */
function oneAnswerSchema(document: Json): void {
	const schemas: Record<string, Json> = document.components?.schemas ?? {};
	const merged2xx = new Set<string>();
	for (const { op } of operationsOf(document)) {
		const answers = Object.entries((op.responses ?? {}) as Record<string, Json>)
			.filter(([status, response]) => status.startsWith("2") && response.content?.["application/json"]?.schema?.$ref)
			.map(([, response]) => response.content["application/json"]);
		const names = [...new Set(answers.map((media) => String(media.schema.$ref).split("/").pop() ?? ""))];
		if (names.length < 2 || !names.every((name) => schemas[name]?.properties)) continue;
		const name = names.join("Or");
		schemas[name] ??= {
			description: `One of: ${names.map((n) => `${n} (${schemas[n].description ?? n})`).join("; ")}. The HTTP status says which`,
			...merged(names.map((n) => schemas[n])),
			...(schemas[names[0] as string].example ? { example: schemas[names[0] as string].example } : {}),
		};
		for (const media of answers) media.schema = { $ref: `#/components/schemas/${name}` };
		for (const n of names) merged2xx.add(n);
	}
	const used = new Set<string>();
	walk(document, (node) => {
		if (typeof node.$ref === "string") used.add(node.$ref.split("/").pop());
	});
	for (const name of merged2xx) if (!used.has(name)) delete schemas[name];
}

/**
 * The nullable references `downgrade` wrapped (`nullable` + `allOf: [$ref]`): a component only
 * ever referenced that way becomes nullable itself and its references bare `$ref`s, which both
 * validators (null is valid) and generators (no `AllOf…` model) read right. The others keep the
 * wrapper, with the `type` that `nullable` needs beside it (3.0.3).
 */
function nullableReferences(document: Json): void {
	const schemas: Record<string, Json> = document.components?.schemas ?? {};
	const target = (ref: string) => ref.split("/").pop() ?? "";
	const wrapped: Json[] = [];
	const references = new Map<string, number>();
	walk(document, (node) => {
		if (typeof node.$ref === "string") references.set(target(node.$ref), (references.get(target(node.$ref)) ?? 0) + 1);
		if (node.nullable && node.allOf?.length === 1 && node.allOf[0].$ref && !node.type) wrapped.push(node);
	});
	const wrappedCount = new Map<string, number>();
	for (const node of wrapped)
		wrappedCount.set(target(node.allOf[0].$ref), (wrappedCount.get(target(node.allOf[0].$ref)) ?? 0) + 1);
	for (const node of wrapped) {
		const name = target(node.allOf[0].$ref);
		const component = schemas[name];
		if (component && wrappedCount.get(name) === references.get(name)) {
			component.nullable = true;
			component.description ??= node.description;
			for (const key of Object.keys(node)) delete node[key];
			node.$ref = `#/components/schemas/${name}`;
		} else if (typeof component?.type === "string") node.type = component.type;
	}
}

function mapValues(object: Json, f: (value: Json) => Json): Json {
	return Object.fromEntries(Object.entries(object).map(([key, value]) => [key, f(value)]));
}

/** Keywords that make a schema more than "any value". */
const shaping = ["type", "$ref", "allOf", "anyOf", "oneOf", "enum", "properties", "items", "not"];

/**
 * A schema of any value is `{}`: swagger-codegen's Go client declares it as an `Object` type it
 * never defines, while `type: object` without properties becomes `interface{}` in Go and `object`
 * in Python, both of which hold any JSON value. So the twin says `type: object` and, in words,
 * that any value comes.
 */
function anyValue(node: Json): void {
	if (!node || typeof node !== "object" || shaping.some((key) => key in node)) return;
	standIns.add(node);
	node.type = "object";
	node.description = node.description ? `Any JSON value. ${node.description}` : "Any JSON value";
}

/** The `type: object` that stand for "any value" (anyValue), each a node of one twin being made. */
const standIns = new WeakSet<object>();

const isObject = (value: unknown) => typeof value === "object" && value !== null && !Array.isArray(value);

/** Whether `value` puts only objects (or null) where `schema` has an any-value stand-in. */
function fitsStandIns(schema: Json, value: unknown, schemas: Record<string, Json>, depth = 0): boolean {
	if (!schema || typeof schema !== "object" || depth > 32) return true;
	if (schema.$ref) return fitsStandIns(schemas[schema.$ref.split("/").pop()], value, schemas, depth + 1);
	if (standIns.has(schema) && value !== null && !isObject(value)) return false;
	const fits = (s: Json, v: unknown) => fitsStandIns(s, v, schemas, depth + 1);
	if (!(schema.allOf ?? []).every((branch: Json) => fits(branch, value))) return false;
	if (Array.isArray(value)) return value.every((item) => fits(schema.items, item));
	if (!isObject(value)) return true;
	return Object.entries(value as object).every(([key, v]) =>
		fits(
			schema.properties?.[key] ?? (isObject(schema.additionalProperties) ? schema.additionalProperties : undefined),
			v,
		),
	);
}

const isNullSchema = (schema: Json) =>
	schema?.type === "null" || (schema?.enum?.length === 1 && schema.enum[0] === null);

/** Rewrites one schema node in place into its 3.0 form (children were rewritten first). */
function downgrade(node: Json): void {
	if (!node || typeof node !== "object" || Array.isArray(node)) return;
	if (Array.isArray(node.type)) {
		const types = node.type.filter((t: string) => t !== "null");
		if (types.length < node.type.length) node.nullable = true;
		if (types.length === 1) node.type = types[0];
		else delete node.type; // several types: any value (3.0 has no type lists)
	}
	if (node.type === "null") {
		delete node.type;
		node.nullable = true;
		node.enum = [null];
	}
	if ("const" in node) {
		node.enum = [node.const];
		delete node.const;
	}
	for (const [bound, flag] of [
		["exclusiveMinimum", "minimum"],
		["exclusiveMaximum", "maximum"],
	] as const)
		if (typeof node[bound] === "number") {
			node[flag] = node[bound];
			node[bound] = true;
		}
	if (Array.isArray(node.examples)) {
		if (node.example === undefined && node.examples.length > 0) node.example = node.examples[0];
		delete node.examples;
	}
	for (const key of ["$schema", "$id", "contentMediaType", "contentEncoding", "unevaluatedProperties"])
		delete node[key];
	// 3.0 ignores whatever stands beside a `$ref` (and linters call it an error): the component says it.
	if (typeof node.$ref === "string") for (const key of Object.keys(node)) if (key !== "$ref") delete node[key];
	for (const union of ["anyOf", "oneOf"] as const) {
		if (!Array.isArray(node[union]) || node.discriminator) continue;
		const branches = node[union].filter((b: Json) => !isNullSchema(b));
		if (branches.length < node[union].length) node.nullable = true;
		delete node[union];
		// A nullable reference: 3.0 ignores every sibling of a `$ref` (`nullable` and `description`
		// included), so it is wrapped, `allOf: [$ref]` beside `nullable: true`, the form 3.0.3 gives
		// for a nullable reference (`Approval.answer`: null while pending).
		if (branches.length === 1 && branches[0].$ref && node.nullable) node.allOf = [branches[0]];
		else if (branches.length === 1) Object.assign(node, branches[0]);
		else if (branches.every((b: Json) => b.type === "object" && b.properties && !b.$ref))
			Object.assign(node, merged(branches));
		// Otherwise: any value; the description says what the gateway takes.
	}
	// 3.0.3: a nullable enum lists null among its values, or null is not one of them.
	if (node.nullable && Array.isArray(node.enum) && !node.enum.includes(null)) node.enum = [...node.enum, null];
	if (node.additionalProperties === true) delete node.additionalProperties;
	// Children were rewritten first, so a property or item left without a type accepts any value.
	const children = [...Object.values(node.properties ?? {}), node.items, node.additionalProperties, node.schema];
	for (const child of children) anyValue(child);
	if (node.properties && Array.isArray(node.required)) {
		const required = node.required.filter((name: string) => !node.properties[name]?.nullable);
		if (required.length > 0) node.required = required;
		else delete node.required;
	}
}

/** One object holding every branch's properties; required only what every branch requires. */
function merged(branches: Json[]): Json {
	const properties: Record<string, Json> = {};
	for (const branch of branches) Object.assign(properties, branch.properties);
	const required = Object.keys(properties).filter((name) => branches.every((b) => b.required?.includes(name)));
	const strict = branches.every((b) => b.additionalProperties === false);
	return {
		type: "object",
		properties,
		...(required.length > 0 ? { required } : {}),
		...(strict ? { additionalProperties: false } : {}),
	};
}
