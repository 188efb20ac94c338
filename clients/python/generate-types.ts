/**
 * Writes clients/python/src/pi_gateway/schema.py: one TypedDict per object schema of openapi.yaml's
 * components (Literal aliases for enums, Union aliases for oneOf/anyOf), so the Python client's
 * answers are typed from the same spec as the TypeScript one. `npm run spec` runs it (through
 * `npm run clients:types`); test/e2e/client-python.test.ts fails when the checked-in file differs.
 *
 * It writes event_types.py beside it too (generate-events.ts: a dataclass per event type).
 *
 *   node clients/python/generate-types.ts [openapi.yaml] [schema.py] [event_types.py]
 */
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { parse } from "yaml";
import { generateEvents } from "./generate-events.ts";

export type Schema = {
	$ref?: string;
	type?: string | string[];
	enum?: unknown[];
	const?: unknown;
	items?: Schema;
	properties?: Record<string, Schema>;
	required?: string[];
	additionalProperties?: boolean | Schema;
	oneOf?: Schema[];
	anyOf?: Schema[];
	allOf?: Schema[];
	nullable?: boolean;
	description?: string;
};

const keywords = new Set(
	"False None True and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield".split(
		" ",
	),
);
const identifier = /^[A-Za-z_][A-Za-z0-9_]*$/;

const literal = (v: unknown) =>
	typeof v === "string" ? JSON.stringify(v) : v === null ? "None" : v ? "True" : "False";

/** How a `$ref` to a component is written: quoted (a forward reference in schema.py), or `s.Name` elsewhere. */
type Ref = (name: string) => string;
const quoted: Ref = (name) => JSON.stringify(name);

/** The Python type of a schema, written inside a string annotation-free context (forward refs quoted). */
export function pyType(s: Schema | undefined, ref: Ref = quoted): string {
	if (!s || Object.keys(s).length === 0) return "Any";
	if (s.$ref) return ref(s.$ref.split("/").pop() as string);
	if (s.const !== undefined) return `Literal[${literal(s.const)}]`;
	if (s.enum) return `Literal[${s.enum.map(literal).join(", ")}]`;
	const union = s.oneOf ?? s.anyOf;
	if (union) return unionOf(union.map((member) => pyType(member, ref)));
	if (s.allOf?.length === 1) return pyType(s.allOf[0], ref);
	if (s.allOf) return "Dict[str, Any]";
	if (Array.isArray(s.type)) return unionOf(s.type.map((t) => pyType({ ...s, type: t }, ref)));
	const base = scalar(s, ref);
	return s.nullable ? unionOf([base, "None"]) : base;
}

function scalar(s: Schema, ref: Ref): string {
	switch (s.type) {
		case "string":
			return "str";
		case "integer":
			return "int";
		case "number":
			return "float";
		case "boolean":
			return "bool";
		case "null":
			return "None";
		case "array":
			return `List[${pyType(s.items, ref)}]`;
		case "object":
			return typeof s.additionalProperties === "object" && !s.properties
				? `Dict[str, ${pyType(s.additionalProperties, ref)}]`
				: "Dict[str, Any]";
		default:
			return "Any";
	}
}

function unionOf(types: string[]): string {
	const unique = [...new Set(types)];
	if (unique.includes("Any")) return "Any";
	return unique.length === 1 ? (unique[0] as string) : `Union[${unique.join(", ")}]`;
}

function docstring(text: string | undefined, indent: string): string[] {
	if (!text) return [];
	const one = text.replace(/\s+/g, " ").replace(/\\/g, "\\\\").replace(/"""/g, '\\"\\"\\"').trim();
	return [`${indent}"""${one}"""`];
}

/** A field's description as a comment line (type checkers take only annotations in a TypedDict body). */
function comment(text: string | undefined): string[] {
	if (!text) return [];
	const one = text.replace(/\s+/g, " ").trim();
	return [`    # ${one.length > 150 ? `${one.slice(0, 147)}...` : one}`];
}

/** A TypedDict (class syntax, or the functional one when a key is not an identifier) or an alias. */
function definition(name: string, s: Schema): string[] {
	const props = s.properties ?? (s.allOf?.find((p) => p.properties)?.properties as Schema["properties"]);
	if (!props || (s.type !== "object" && !s.allOf && s.type !== undefined)) return [`${name} = ${pyType(s)}`];
	const required = new Set(s.required ?? s.allOf?.flatMap((p) => p.required ?? []) ?? []);
	const entries = Object.entries(props);
	const awkward = entries.some(([key]) => !identifier.test(key) || keywords.has(key));
	const fields = (keep: (key: string) => boolean) => entries.filter(([key]) => keep(key));
	const req = fields((k) => required.has(k));
	const opt = fields((k) => !required.has(k));
	if (awkward) {
		// Keys such as `from` cannot be class attributes: the functional syntax, joined by inheritance.
		const dict = (list: [string, Schema][]) =>
			`{${list.map(([k, v]) => `${JSON.stringify(k)}: ${pyType(v)}`).join(", ")}}`;
		return [
			`_${name}Required = TypedDict("_${name}Required", ${dict(req)})`,
			`_${name}Optional = TypedDict("_${name}Optional", ${dict(opt)}, total=False)`,
			"",
			"",
			`class ${name}(_${name}Required, _${name}Optional):`,
			...(docstring(s.description, "    ").length ? docstring(s.description, "    ") : ["    pass"]),
		];
	}
	const body = (list: [string, Schema][]) =>
		list.length === 0 ? ["    pass"] : list.flatMap(([k, v]) => [...comment(v.description), `    ${k}: ${pyType(v)}`]);
	if (opt.length === 0) return [`class ${name}(TypedDict):`, ...docstring(s.description, "    "), ...body(req)];
	if (req.length === 0)
		return [`class ${name}(TypedDict, total=False):`, ...docstring(s.description, "    "), ...body(opt)];
	return [
		`class _${name}Required(TypedDict):`,
		...body(req),
		"",
		"",
		`class ${name}(_${name}Required, total=False):`,
		...docstring(s.description, "    "),
		...body(opt),
	];
}

export function generate(spec: { components?: { schemas?: Record<string, Schema> } }): string {
	const schemas = Object.entries(spec.components?.schemas ?? {});
	// Aliases refer to classes by quoted name, so order does not matter; classes first reads better.
	const isClass = ([, s]: [string, Schema]) => Boolean(s.properties);
	const ordered = [...schemas.filter(isClass), ...schemas.filter((e) => !isClass(e))];
	const out = [
		'"""Types of pi-gateway\'s API, one per schema in openapi.yaml\'s components.',
		"",
		"Generated by clients/python/generate-types.ts (npm run clients:types); do not edit.",
		'"""',
		"",
		"from typing import Any, Dict, List, Literal, TypedDict, Union",
		"",
		"__all__ = [",
		...schemas.map(([n]) => `    ${JSON.stringify(n)},`),
		"]",
	];
	for (const [name, s] of ordered) out.push("", "", ...definition(name, s));
	return `${out.join("\n")}\n`;
}

if (import.meta.main) {
	const repo = resolve(import.meta.dirname, "../..");
	const input = process.argv[2] ?? resolve(repo, "openapi.yaml");
	const output = process.argv[3] ?? resolve(repo, "clients/python/src/pi_gateway/schema.py");
	const events = process.argv[4] ?? resolve(repo, "clients/python/src/pi_gateway/event_types.py");
	const spec = parse(readFileSync(input, "utf8"));
	writeFileSync(output, generate(spec));
	writeFileSync(events, generateEvents(spec));
}
