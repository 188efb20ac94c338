/**
 * Writes clients/python/src/pi_gateway/event_types.py: one dataclass per event type of openapi.yaml's
 * `StreamEvent` (every entry of its discriminator and of its oneOf), each field of the event's schema
 * as a snake_case attribute, and `EVENT_CLASSES` from type to class. events.py adds helpers to some
 * (`MessageUpdate.text_delta`, …) and picks the class for each frame, so an event the spec gains is
 * typed the day `npm run clients:types` runs, not the day someone writes its class by hand.
 */
import { pyType, type Schema } from "./generate-types.ts";

type Spec = { components?: { schemas?: Record<string, Schema & { discriminator?: Discriminator }> } };
type Discriminator = { propertyName?: string; mapping?: Record<string, string> };

/** The JSON `id` of these events is not the log position the base class's `id` holds. */
const idNames: Record<string, string> = {
	response: "command_id",
	bash_execution_update: "command_id",
	extension_ui_request: "request_id",
};
/** Attributes an event already has (the base class's, dict's methods): a field named so gets a `_`. */
const taken = new Set(
	"type raw id clear copy fromkeys get items keys pop popitem setdefault update values TYPE".split(" "),
);
const keywords = new Set(
	"False None True and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield".split(
		" ",
	),
);
/** Class names that would read as something else (`Error` as an exception, the package's `RunLost` error). */
const reservedClasses = new Set(["Event", "Raw", "Error", "Exception", "RunLost"]);

/** Every event type the spec declares, with its schema: the discriminator's mapping and the oneOf's refs. */
export function eventTypes(spec: Spec): { type: string; name: string; schema: Schema }[] {
	const schemas = spec.components?.schemas ?? {};
	const union = schemas.StreamEvent;
	if (!union) throw new Error("openapi.yaml has no StreamEvent schema");
	const byType = new Map<string, string>();
	for (const [type, ref] of Object.entries(union.discriminator?.mapping ?? {})) byType.set(type, refName(ref));
	for (const member of union.oneOf ?? []) {
		const name = refName(member.$ref ?? "");
		const typeField = schemas[name]?.properties?.type;
		const types = typeField?.enum ?? (typeField?.const !== undefined ? [typeField.const] : []);
		if (types.length === 0) throw new Error(`StreamEvent member ${name} names no type`);
		for (const type of types) if (!byType.has(String(type))) byType.set(String(type), name);
	}
	return [...byType].map(([type, name]) => {
		const schema = schemas[name];
		if (!schema) throw new Error(`StreamEvent names ${name}, which is not in components`);
		return { type, name, schema };
	});
}

const refName = (ref: string) => ref.split("/").pop() ?? ref;

export function className(type: string): string {
	const name = type
		.split(/[^A-Za-z0-9]+/)
		.filter(Boolean)
		.map((word) => word[0]?.toUpperCase() + word.slice(1))
		.join("");
	return reservedClasses.has(name) || !/^[A-Za-z]/.test(name) ? `${name}Event` : name;
}

export function fieldName(type: string, key: string): string {
	if (key === "id") return idNames[type] ?? "id_";
	const snake = key
		.replace(/([a-z0-9])([A-Z])/g, "$1_$2")
		.replace(/[^A-Za-z0-9_]/g, "_")
		.toLowerCase();
	const safe = /^[0-9]/.test(snake) ? `_${snake}` : snake;
	return taken.has(safe) || keywords.has(safe) ? `${safe}_` : safe;
}

/** One line of text for a docstring or comment. */
const oneLine = (text: string | undefined) =>
	(text ?? "").replace(/\s+/g, " ").replace(/\\/g, "\\\\").replace(/"""/g, '\\"\\"\\"').trim();

/** Text in lines of at most `width` characters (a longer word stays whole). */
function wrap(text: string, width: number): string[] {
	const lines: string[] = [];
	let line = "";
	for (const word of text.split(" ").filter(Boolean)) {
		if (line && line.length + 1 + word.length > width) {
			lines.push(line);
			line = word;
		} else line = line ? `${line} ${word}` : word;
	}
	if (line) lines.push(line);
	return lines;
}

/** A class docstring, wrapped to 100 columns. */
function docstring(text: string): string[] {
	const lines = wrap(text, 100 - 7);
	if (lines.length === 1) return [`    """${lines[0]}"""`];
	return lines.map((line, i) => `    ${i === 0 ? '"""' : ""}${line}${i === lines.length - 1 ? '"""' : ""}`);
}

function eventClass(type: string, schema: Schema): string[] {
	const name = className(type);
	const fields = Object.entries(schema.properties ?? {}).filter(([key]) => key !== "type");
	const doc = oneLine(schema.description);
	const out = [
		"@dataclass(eq=False)",
		`class ${name}(Event):`,
		...docstring(`\`\`${type}\`\`${doc ? `: ${doc}` : ""}`),
		"",
	];
	out.push(`    TYPE: ClassVar[str] = ${JSON.stringify(type)}`);
	for (const [key, field] of fields) {
		const description = oneLine(field.description);
		const source = fieldName(type, key) === key ? "" : ` (JSON \`\`${key}\`\`)`;
		out.push(...wrap(`${description}${source}`, 100 - 7).map((line) => `    #: ${line}`));
		const annotation = pyType(field, (ref) => `s.${ref}`);
		out.push(`    ${fieldName(type, key)}: ${annotation === "Any" ? "Any" : `Optional[${annotation}]`} = None`);
	}
	if (fields.length > 0) {
		const values = fields.map(([key]) => `"${fieldName(type, key)}": raw.get(${JSON.stringify(key)})`);
		out.push("", "    @classmethod", "    def _fields(cls, raw: Raw) -> Dict[str, Any]:");
		const one = `        return {${values.join(", ")}}`;
		if (one.length <= 110) out.push(one);
		else out.push("        return {", ...values.map((v) => `            ${v},`), "        }");
	}
	return out;
}

export function generateEvents(spec: Spec): string {
	const events = eventTypes(spec);
	const out = [
		'"""Typed events: one dataclass per event type of openapi.yaml\'s ``StreamEvent``, its fields as',
		"snake_case attributes (None when the frame lacks them), and ``EVENT_CLASSES`` from type to class.",
		"",
		"Generated by clients/python/generate-types.ts (npm run clients:types); do not edit. ``events``",
		"adds helpers to some of them and is where to import them from.",
		'"""',
		"",
		"from dataclasses import dataclass",
		"from typing import Any, ClassVar, Dict, List, Literal, Optional, Type, Union",
		"",
		"from . import schema as s",
		"from .event_base import Event, Raw",
		"",
		"__all__ = [",
		...events.map(({ type }) => `    ${JSON.stringify(className(type))},`),
		'    "EVENT_CLASSES",',
		"]",
	];
	for (const { type, schema } of events) out.push("", "", ...eventClass(type, schema));
	out.push("", "", "EVENT_CLASSES: Dict[str, Type[Event]] = {");
	for (const { type } of events) out.push(`    ${JSON.stringify(type)}: ${className(type)},`);
	out.push("}");
	return `${out.join("\n")}\n`;
}
