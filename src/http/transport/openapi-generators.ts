/**
 * The published OpenAPI document, written for SDK generators: a transform of the document the
 * routes generate, so an operation added tomorrow gets the same treatment without knowing of it.
 *
 * The gateway itself keeps reading the routes' own document (scopes, idempotency, body rules and
 * the audit log's dotted action names come from it); what /openapi.json serves is this one.
 * - operationIds become identifiers in every common language (`sessions.create` → `sessionsCreate`);
 *   the dotted name, which the audit log records as `action`, stays in `x-operation-name`;
 * - `additionalProperties: {}` (zod's loose objects) becomes `additionalProperties: true`;
 * - inline object request bodies and responses get names in `components.schemas` (`PromptBody`,
 *   `HealthResponse`) instead of the generator's `IdPromptBody` / `InlineResponse200`;
 * - a component given a description or example where it is used (`allOf: [$ref, {description}]`,
 *   which zod-to-openapi writes and generators turn into an extra model) is a `$ref` with the
 *   description beside it, or for a parameter, the parameter's own description and example;
 * - patterns say `/`, not the `\/` a JavaScript regex's source has (openapi-zod-client copies a
 *   pattern into a regex literal of its own and choked on it);
 * - a nullable enum (`type: [string, null]`, `enum: [a, b, null]`, as zod-to-openapi writes
 *   `z.enum([a, b]).nullable()`) is `anyOf: [{type: string, enum: [a, b]}, {type: null}]`:
 *   openapi-zod-client wrote `z.enum([a, b, null])`, which zod refuses;
 * - every error response carries `application/problem+json` with the `Problem` schema;
 * - an operation without a request body declares no 413 or 415 (what the shared command errors
 *   list for the operations that take one);
 * - header parameters are named as HTTP writes them (`Prefer`, `Last-Event-ID`), like the
 *   response headers: Hono's validators see them lower-cased, the document need not;
 * - each operation's scope is also in `x-required-scope` and its description.
 */

import { problemDescriptions } from "./openapi.ts";

// biome-ignore lint/suspicious/noExplicitAny: a JSON document walked generically
export type Json = any;

const httpMethods = new Set(["get", "put", "post", "delete", "patch", "options", "head", "trace"]);

/** Every operation of the document, with its path and method. */
export function operationsOf(document: Json): { path: string; method: string; op: Json }[] {
	return Object.entries(document.paths ?? {}).flatMap(([path, item]) =>
		Object.entries(item as object)
			.filter(([method]) => httpMethods.has(method))
			.map(([method, op]) => ({ path, method, op })),
	);
}

/** `sessions.getLastAssistantText` → `sessionsGetLastAssistantText`: letters and digits only. */
export function identifierFor(operationId: string): string {
	const [first = "", ...rest] = operationId.split(/[^A-Za-z0-9]+/).filter(Boolean);
	return first + rest.map((part) => part[0]?.toUpperCase() + part.slice(1)).join("");
}

const pascal = (name: string) => name[0]?.toUpperCase() + name.slice(1);

/** The name of an operation without its resource (`sessions.setModel` → `SetModel`). */
const shortName = (dotted: string) =>
	pascal(identifierFor(dotted.includes(".") ? dotted.slice(dotted.indexOf(".") + 1) : dotted));

/** Values, not schemas: a walk does not look inside them. */
const values = new Set(["example", "examples", "default", "enum", "const"]);

/** Walks every object of a document (but not inside example and default values), children first. */
export function walk(node: Json, visit: (node: Json) => void): void {
	if (Array.isArray(node)) for (const item of node) walk(item, visit);
	else if (node && typeof node === "object") {
		for (const [key, value] of Object.entries(node)) if (!values.has(key)) walk(value, visit);
		visit(node);
	}
}

const isNamedObject = (schema: Json) =>
	schema &&
	!schema.$ref &&
	(schema.type === "object" || (Array.isArray(schema.type) && schema.type.includes("object"))) &&
	schema.properties;

/**
 * swagger-codegen names an inline object property `<Schema><Property>` (`Session.model` →
 * `SessionModel`); when a component already has that name, one model overwrites the other (Go's
 * `ApprovalAnswer`, the request body, lost `by` to `Approval.answer`). Such a property gets a
 * component of its own, `<Schema><Property>Object`, nullable through an `anyOf` with null.
 */
function nameCollidingObjects(schemas: Record<string, Json>): void {
	for (const [parent, schema] of Object.entries(schemas))
		for (const [property, inline] of Object.entries((schema.properties ?? {}) as Record<string, Json>)) {
			if (!isNamedObject(inline) || !schemas[parent + pascal(property)]) continue;
			let unique = `${parent}${pascal(property)}Object`;
			for (let n = 2; schemas[unique]; n++) unique = `${parent}${pascal(property)}Object${n}`;
			const { description, ...shape } = inline;
			const nullable = Array.isArray(shape.type) && shape.type.includes("null");
			schemas[unique] = { ...(description ? { description } : {}), ...shape, type: "object" };
			const ref = { $ref: `#/components/schemas/${unique}` };
			schema.properties[property] = {
				...(nullable ? { anyOf: [ref, { type: "null" }] } : ref),
				...(description ? { description } : {}),
			};
		}
}

/** `\/` → `/` (an escaped backslash before a slash, `\\/`, stays as it is). */
export function unescapedSlashes(pattern: string): string {
	let before: string;
	let after = pattern;
	do {
		before = after;
		after = before.replace(/((?:^|[^\\])(?:\\\\)*)\\\//g, "$1/");
	} while (after !== before);
	return after;
}

/** See the module comment: null out of an enum, into a branch of its own. */
function nullableEnum(node: Json): void {
	if (!Array.isArray(node.enum) || !node.enum.includes(null) || !Array.isArray(node.type)) return;
	const types = node.type.filter((t: string) => t !== "null");
	if (types.length !== 1 || types.length === node.type.length) return;
	const { description, example, ...rest } = node;
	for (const key of Object.keys(node)) delete node[key];
	node.anyOf = [{ ...rest, type: types[0], enum: rest.enum.filter((v: unknown) => v !== null) }, { type: "null" }];
	if (description !== undefined) node.description = description;
	if (example !== undefined) node.example = example;
}

/** Keywords that only annotate: an `allOf` branch of nothing else adds no constraint. */
const annotations = new Set(["description", "example", "examples", "title", "deprecated"]);

/** `allOf: [{$ref}, {description, example}]` → `{$ref, description, example}` (3.1 allows a `$ref`'s siblings). */
function annotatedReference(node: Json): void {
	if (!Array.isArray(node.allOf) || node.allOf.length !== 2) return;
	const ref = node.allOf.find((branch: Json) => typeof branch?.$ref === "string" && Object.keys(branch).length === 1);
	const notes = node.allOf.find((branch: Json) => branch !== ref);
	if (!ref || !notes || !Object.keys(notes).every((key) => annotations.has(key))) return;
	delete node.allOf;
	Object.assign(node, ref, notes);
}

const problemSchema = { $ref: "#/components/schemas/Problem" };

/** Header names as HTTP writes them: `last-event-id` → `Last-Event-ID`, `if-none-match` → `If-None-Match`. */
export function headerCase(name: string): string {
	const words: Record<string, string> = { id: "ID", etag: "ETag" };
	return name
		.split("-")
		.map((word) => words[word.toLowerCase()] ?? (word[0]?.toUpperCase() ?? "") + word.slice(1).toLowerCase())
		.join("-");
}

/** The published 3.1 document: the routes' document, written for generators (see the module comment). */
export function forGenerators(source: Json): Json {
	const document = structuredClone(source);
	document.components ??= {};
	document.components.schemas ??= {};
	const schemas: Record<string, Json> = document.components.schemas;

	walk(document, (node) => {
		const extra = node.additionalProperties;
		if (extra && typeof extra === "object" && !Array.isArray(extra) && Object.keys(extra).length === 0)
			node.additionalProperties = true;
	});

	/** Names an inline object schema, reusing the name of an identical one named before. */
	const name = (schema: Json, wanted: string): Json => {
		for (const [existing, named] of Object.entries(schemas))
			if (existing.startsWith(wanted.replace(/\d+$/, "")) && JSON.stringify(named) === JSON.stringify(schema))
				return { $ref: `#/components/schemas/${existing}` };
		let unique = wanted;
		for (let n = 2; schemas[unique]; n++) unique = `${wanted}${n}`;
		schemas[unique] = schema;
		return { $ref: `#/components/schemas/${unique}` };
	};

	walk(document, annotatedReference);
	walk(document, nullableEnum);
	walk(document, (node) => {
		if (typeof node.pattern === "string") node.pattern = unescapedSlashes(node.pattern);
	});
	for (const { op } of operationsOf(document))
		for (const parameter of op.parameters ?? []) {
			const { description, example, ...schema } = parameter.schema ?? {};
			if (!schema.$ref) continue;
			parameter.schema = schema;
			parameter.description ??= description;
			if (example !== undefined) parameter.example ??= example;
		}

	nameCollidingObjects(schemas);
	const operations = operationsOf(document);
	// A stream operation's body is its JSON twin's (`sessions.promptStream` sends a `PromptBody`).
	const sorted = [...operations].sort(
		(a, b) => Number(a.op.operationId?.endsWith("Stream")) - Number(b.op.operationId?.endsWith("Stream")),
	);
	for (const { op } of sorted) {
		const dotted: string = op.operationId ?? "";
		const short = shortName(dotted.replace(/Stream$/, ""));
		// A schema named here says what it is, as every component does: the operation's body or answer.
		const what = `\`${identifierFor(dotted.replace(/Stream$/, ""))}\` (${op.summary ?? dotted})`;
		for (const media of Object.values(op.requestBody?.content ?? {}) as Json[])
			if (isNamedObject(media.schema))
				media.schema = name({ description: `The body of ${what}`, ...media.schema }, `${short}Body`);
		for (const [status, response] of Object.entries(op.responses ?? {}) as [string, Json][]) {
			for (const media of Object.values(response.content ?? {}) as Json[])
				if (isNamedObject(media.schema))
					media.schema = name(
						{ description: `The answer of \`${identifierFor(dotted)}\`: ${response.description}`, ...media.schema },
						`${shortName(dotted)}Response`,
					);
			if (/^[45]/.test(status) && !response.content?.["application/problem+json"])
				response.content = { ...response.content, "application/problem+json": { schema: problemSchema } };
		}
	}

	for (const { op } of operations) {
		// The archive's own 413 (a folder too large to send) stays: only the body's are dropped.
		if (!op.requestBody)
			for (const status of ["413", "415"])
				if (op.responses?.[status]?.description === problemDescriptions[Number(status)]) delete op.responses[status];
		for (const parameter of op.parameters ?? [])
			if (parameter.in === "header") parameter.name = headerCase(parameter.name);
		if (op.operationId) {
			op["x-operation-name"] = op.operationId;
			op.operationId = identifierFor(op.operationId);
		}
		const scope = op.security?.[0]?.bearer?.[0];
		if (typeof scope === "string") {
			op["x-required-scope"] = scope;
			const says = `Requires the \`${scope}\` scope.`;
			op.description = op.description ? `${op.description}\n\n${says}` : says;
		}
	}
	return document;
}
