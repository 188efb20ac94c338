import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import { RE2JS } from "re2js";
import { GatewayError } from "../errors.ts";

/**
 * Structured output (issue 31 item 2): a caller's JSON Schema, checked as a schema before anything
 * reaches pi, the instruction that tells the model what to answer, and the final text of a run read
 * back as JSON and validated. The schema is the caller's; the model's text is only ever data here:
 * it is parsed with JSON.parse and tested, never compiled or evaluated.
 *
 * The validator is ajv 8 (pinned): the JSON Schema validator most of npm uses, maintained, with the
 * 2020-12 dialect OpenAPI 3.1 speaks. Its `pattern` keyword runs on re2js (linear time), so a
 * caller's pattern cannot stall the gateway on a long answer.
 */

/** Repair turns after the first answer: a run with `outputSchema` makes at most 1 + this many answers. */
export const maxRepairTurns = 2;
/** A schema's JSON text may not be longer than this. */
export const maxSchemaChars = 64 * 1024;
/** Where the gateway's instruction begins in a user message (the demo model drops it from its echo). */
export const instructionMarker = "[pi-gateway structured output]";

/** re2js in the shape ajv's `code.regExp` option wants: a constructor-like function with `test`. */
const re2 = Object.assign(
	(pattern: string, _flags: string) => {
		const compiled = RE2JS.compile(pattern);
		// ajv keys its compiled patterns by toString(): an object's default would make them all one.
		return { test: (text: string) => compiled.matcher(text).find(), toString: () => `re2:${pattern}` };
	},
	{ code: "re2js" },
);

/**
 * An instance per schema: one shared instance kept every schema it compiled (about 1 MB each, for
 * as long as the gateway ran, refused prompts' too) and its `$id`s were one namespace for every
 * tenant (one caller's `$id` made another's 400, or resolved another's `$ref` to it).
 */
const newAjv = () =>
	new Ajv2020({
		allErrors: true,
		strict: false,
		validateFormats: false,
		code: { regExp: re2 },
		// No schema is ever fetched: a $ref that is not in the schema itself is an error.
		loadSchema: undefined,
	});

/** How deep an answer may nest before it is refused unchecked (ajv's checks recurse on the stack). */
export const maxAnswerDepth = 128;

export interface OutputSpec {
	schema: Record<string, unknown> | boolean;
	validate: ValidateFunction;
}

/** The caller's schema, compiled; 400 `invalid_output_schema` (before pi) when it is not a usable JSON Schema. */
export function compileOutputSchema(schema: unknown): OutputSpec {
	const invalid = (why: string) => new GatewayError(400, "invalid_output_schema", `outputSchema: ${why}`);
	if (typeof schema !== "boolean" && (typeof schema !== "object" || schema === null || Array.isArray(schema)))
		throw invalid("a JSON Schema is an object (or true/false)");
	if (JSON.stringify(schema).length > maxSchemaChars) throw invalid(`longer than ${maxSchemaChars} characters`);
	// ajv compares every pair of items for it: a 300 KB answer held the event loop for 25 s.
	if (hasTrue(schema, "uniqueItems"))
		throw invalid("uniqueItems is not supported (checking it takes time quadratic in the array's length)");
	let validate: ValidateFunction;
	try {
		validate = newAjv().compile(schema as Record<string, unknown>);
	} catch (error) {
		throw invalid((error as Error).message);
	}
	// A schema that refers to itself without end ({"$ref": "#"}) overflows the stack on any value.
	try {
		validate(null);
	} catch {
		throw invalid("it refers to itself without end (a $ref that never reaches a type)");
	}
	return { schema: schema as OutputSpec["schema"], validate };
}

/** What a user message carries after its text so that the model answers in the schema's shape. */
export function instruction(spec: OutputSpec): string {
	return `\n\n${instructionMarker} Answer with one JSON value that validates against this JSON Schema, and nothing else (no prose, no code fence):\n${JSON.stringify(spec.schema)}`;
}

/** The follow-up prompt of a repair turn: what was wrong with the last answer, and the schema again. */
export function repairPrompt(spec: OutputSpec, problem: string): string {
	return `${instructionMarker} Your last answer was not usable: ${problem}. Answer again with one JSON value that validates against this JSON Schema, and nothing else (no prose, no code fence):\n${JSON.stringify(spec.schema)}`;
}

export type Checked = { ok: true; value: unknown } | { ok: false; problem: string };

/**
 * The JSON in a final answer: the whole text, else the body of a ```json fence, else the span from
 * the first `{` or `[` to the last matching bracket. Then the schema decides.
 */
export function checkAnswer(spec: OutputSpec, text: string | null): Checked {
	if (text === null || text.trim() === "") return { ok: false, problem: "the answer had no text" };
	const candidates = jsonCandidates(text);
	let parsed: { value: unknown } | undefined;
	for (const candidate of candidates) {
		try {
			parsed = { value: JSON.parse(candidate) };
			break;
		} catch {}
	}
	if (!parsed) return { ok: false, problem: "the answer held no JSON value" };
	if (depthOf(parsed.value) > maxAnswerDepth)
		return { ok: false, problem: `the JSON nests deeper than ${maxAnswerDepth} levels` };
	try {
		if (spec.validate(parsed.value)) return { ok: true, value: parsed.value };
	} catch {
		// The model's text is data: nothing in it may end the process (a RangeError here once did).
		return { ok: false, problem: "the JSON could not be checked against the schema" };
	}
	return { ok: false, problem: `the JSON does not validate: ${describeErrors(spec.validate.errors ?? [])}` };
}

/** Nesting depth of a parsed JSON value, without recursion (the value may be deep). */
function depthOf(value: unknown): number {
	let deepest = 0;
	const stack: [unknown, number][] = [[value, 1]];
	while (stack.length > 0) {
		const [node, depth] = stack.pop() as [unknown, number];
		if (node === null || typeof node !== "object") continue;
		deepest = Math.max(deepest, depth);
		if (deepest > maxAnswerDepth) return deepest;
		for (const child of Array.isArray(node) ? node : Object.values(node)) stack.push([child, depth + 1]);
	}
	return deepest;
}

/** Whether `key: true` appears anywhere in a JSON value (the schema: at most 64 KiB). */
function hasTrue(value: unknown, key: string): boolean {
	const stack: unknown[] = [value];
	while (stack.length > 0) {
		const node = stack.pop();
		if (node === null || typeof node !== "object") continue;
		if (!Array.isArray(node) && (node as Record<string, unknown>)[key] === true) return true;
		for (const child of Array.isArray(node) ? node : Object.values(node)) stack.push(child);
	}
	return false;
}

function jsonCandidates(text: string): string[] {
	const out = [text.trim()];
	const fence = /```(?:json)?\s*\n([\s\S]*?)```/i.exec(text);
	if (fence?.[1]) out.push(fence[1].trim());
	for (const [open, close] of [
		["{", "}"],
		["[", "]"],
	] as const) {
		const start = text.indexOf(open);
		const end = text.lastIndexOf(close);
		if (start !== -1 && end > start) out.push(text.slice(start, end + 1));
	}
	return out;
}

/** ajv's errors in one short line: `/n must be number; must have required property 'x'`. */
function describeErrors(errors: ErrorObject[]): string {
	const lines = errors.slice(0, 5).map((e) => `${e.instancePath || "(root)"} ${e.message ?? "is invalid"}`);
	if (errors.length > 5) lines.push(`and ${errors.length - 5} more`);
	return lines.join("; ").slice(0, 1000);
}
