import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import { RE2JS } from "re2js";
import { GatewayError } from "../../shared/errors.ts";
import {
	answerCost,
	type CostLimits,
	type SchemaCost,
	SchemaRefusal,
	schemaCost,
	uniqueItemsRefusal,
} from "../schemas/schema-cost.ts";

/**
 * Structured output (issue 31 item 2): a caller's JSON Schema, checked as a schema before anything
 * reaches pi, the instruction that tells the model what to answer, and the final text of a run read
 * back as JSON and validated. The schema is the caller's; the model's text is only ever data here:
 * it is parsed with JSON.parse and tested, never compiled or evaluated.
 *
 * The validator is ajv 8 (pinned): the JSON Schema validator most of npm uses, maintained, with the
 * 2020-12 dialect OpenAPI 3.1 speaks. Its `pattern` keyword runs on re2js (linear time), so a
 * caller's pattern cannot stall the gateway on a long answer. Compiling and checking run on the
 * event loop, so both are bounded before they start (schema-cost.ts): a schema whose compile or
 * whose check of one place in a value would cost too much is refused, and so is an answer whose
 * check would (issue 41: 21 `$defs` of `anyOf`s of two `$ref`s held every tenant 30 s).
 */

/** Repair turns after the first answer: a run with `outputSchema` makes at most 1 + this many answers. */
export const maxRepairTurns = 2;
/** A schema's JSON text may not be longer than this. */
export const maxSchemaChars = 64 * 1024;
/** Where the gateway's instruction begins in a user message (the demo model drops it from its echo). */
export const instructionMarker = "[pi-gateway structured output]";
/** How deep an answer may nest before it is refused unchecked (ajv's checks recurse on the stack). */
export const maxAnswerDepth = 128;

/**
 * The bounds on a schema and on checking an answer against it (schema-cost.ts says what a step is:
 * about 10 ns). They keep each on the event loop for about 5–10 ms at most on a quiet machine (ajv
 * compiles 50–100 keywords a millisecond; a check of the worst kind, failing anyOf branches whose
 * errors are thrown away, runs about 100,000 steps a millisecond).
 */
export const outputSchemaLimits: CostLimits = {
	patterns: "re2",
	maxNesting: 64,
	maxPatternProgram: 1000,
	maxPatternPrograms: 4000,
	maxCompileUnits: 600,
	maxLocationCost: 50_000,
	maxDepth: maxAnswerDepth,
};
/** Steps one answer's check may take; a larger answer is a problem the repair turn names. */
export const maxCheckSteps = 500_000;

/** The dialect's own meta-schema, the only `$schema` a schema may name. */
const metaSchemaId = "https://json-schema.org/draft/2020-12/schema";

/**
 * One instance only checks schemas against the meta-schema: it compiles the meta-schema once (about
 * 50 ms, which each fresh instance used to pay per request) and keeps nothing of what it checks.
 */
const metaAjv = new Ajv2020({ strict: false, validateFormats: false, logger: false });

/**
 * Compiles the meta-schema ahead of the first request that needs it (which took 100 ms more for
 * it): the server calls this once it listens, so the ≈ 40 ms are not part of every start.
 */
export function warmSchemaChecks(): void {
	metaAjv.validateSchema({});
}

/**
 * An instance per schema: one shared instance kept every schema it compiled (about 1 MB each, for
 * as long as the gateway ran, refused prompts' too) and its `$id`s were one namespace for every
 * tenant (one caller's `$id` made another's 400, or resolved another's `$ref` to it). Patterns are
 * the RE2 programs the cost was computed with. `inlineRefs: false` compiles a $ref's target once,
 * not into every place that refers to it; `unevaluated` is on only for a schema that uses it (ajv
 * otherwise merges every target's evaluated names into every $ref, quadratic in compile time).
 */
function newAjv(cost: SchemaCost): Ajv2020 {
	const re2 = Object.assign(
		(pattern: string, _flags: string) => {
			const compiled = cost.graph.patterns.get(pattern) ?? RE2JS.compile(pattern);
			// ajv keys its compiled patterns by toString(): an object's default would make them all one.
			return { test: (text: string) => compiled.matcher(text).find(), toString: () => `re2:${pattern}` };
		},
		{ code: "re2js" },
	);
	const ajv = new Ajv2020({
		// The first problem only: with every problem, a failing answer cost a made-up error per keyword.
		allErrors: false,
		strict: false,
		validateFormats: false,
		validateSchema: false,
		meta: false,
		inlineRefs: false,
		logger: false,
		code: { regExp: re2, optimize: false },
		// No schema is ever fetched: a $ref that is not in the schema itself is an error.
		loadSchema: undefined,
	});
	(ajv.opts as { unevaluated: boolean }).unevaluated = cost.unevaluated;
	return ajv;
}

export interface OutputSpec {
	schema: Record<string, unknown> | boolean;
	validate: ValidateFunction;
	cost: SchemaCost;
}

/**
 * The caller's schema, compiled; 400 `invalid_output_schema` (before pi) when it is not a usable
 * JSON Schema or is over a bound. The bounds are checked before ajv compiles anything.
 */
export function compileOutputSchema(schema: unknown): OutputSpec {
	const invalid = (why: string) => new GatewayError(400, "invalid_output_schema", `outputSchema: ${why}`);
	if (typeof schema !== "boolean" && (typeof schema !== "object" || schema === null || Array.isArray(schema)))
		throw invalid("a JSON Schema is an object (or true/false)");
	if (JSON.stringify(schema).length > maxSchemaChars) throw invalid(`longer than ${maxSchemaChars} characters`);
	if (typeof schema === "object") {
		const named = (schema as Record<string, unknown>).$schema;
		if (named !== undefined && named !== metaSchemaId && named !== `${metaSchemaId}#`)
			throw invalid(`$schema: only ${metaSchemaId} (JSON Schema 2020-12)`);
		if (!metaAjv.validateSchema(schema)) throw invalid(metaAjv.errorsText(metaAjv.errors, { dataVar: "schema" }));
	}
	// ajv compares every pair of items for it: a 300 KB answer held the event loop for 25 s.
	const unique = uniqueItemsRefusal(schema);
	if (unique) throw invalid(unique);
	let cost: SchemaCost;
	try {
		cost = schemaCost(schema, outputSchemaLimits);
	} catch (error) {
		if (error instanceof SchemaRefusal) throw invalid(error.message);
		throw error;
	}
	let validate: ValidateFunction;
	try {
		validate = newAjv(cost).compile(schema as Record<string, unknown>);
	} catch (error) {
		throw invalid((error as Error).message);
	}
	return { schema: schema as OutputSpec["schema"], validate, cost };
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
	// Known before the check runs: the answer's values times what the schema costs at their depth.
	const cost = answerCost(spec.cost, parsed.value, maxCheckSteps);
	if ("tooDeep" in cost) return { ok: false, problem: `the JSON nests deeper than ${maxAnswerDepth} levels` };
	if ("over" in cost)
		return {
			ok: false,
			problem: `the JSON is too large to check against this schema (more than ${maxCheckSteps} steps: fewer or shorter values)`,
		};
	try {
		if (spec.validate(parsed.value)) return { ok: true, value: parsed.value };
	} catch {
		// The model's text is data: nothing in it may end the process (a RangeError here once did).
		return { ok: false, problem: "the JSON could not be checked against the schema" };
	}
	return { ok: false, problem: `the JSON does not validate: ${describeErrors(spec.validate.errors ?? [])}` };
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
