import { describe, expect, it } from "vitest";
import { checkAnswer, compileOutputSchema, instruction, repairPrompt } from "../../src/sessions/runs/run-output.ts";

// Structured output's pure half (src/sessions/runs/run-output.ts): the caller's schema checked and
// compiled, the model's text read as JSON. The e2e half is test/e2e/structured-output.test.ts.
const spec = compileOutputSchema({
	type: "object",
	properties: { code: { type: "string", pattern: "^[A-Z]{3}$" }, n: { type: "integer" } },
	required: ["code"],
});

describe("checkAnswer", () => {
	it.each([
		["the whole text", '{"code":"ABC"}'],
		["a ```json fence", 'Here it is:\n```json\n{"code": "ABC", "n": 2}\n```\nDone.'],
		["the span between the first { and the last }", 'Sure, {"code": "ABC"} is it.'],
	])("finds JSON as %s", (_, text) => {
		expect(checkAnswer(spec, text)).toMatchObject({ ok: true, value: { code: "ABC" } });
	});

	it("says what did not validate, with the instance path", () => {
		expect(checkAnswer(spec, '{"code":"ABC","n":1.5}')).toEqual({
			ok: false,
			problem: "the JSON does not validate: /n must be integer",
		});
	});

	it("runs each schema's own pattern (ajv keys compiled patterns by their text)", () => {
		const other = compileOutputSchema({ type: "string", pattern: "^x+$" });
		expect(checkAnswer(spec, '{"code":"abc"}')).toMatchObject({ ok: false });
		expect(checkAnswer(other, '"xxx"')).toMatchObject({ ok: true });
		expect(checkAnswer(other, '"xy"')).toMatchObject({ ok: false });
	});

	it("reports text with no JSON, and no text", () => {
		expect(checkAnswer(spec, "I would rather not.")).toEqual({ ok: false, problem: "the answer held no JSON value" });
		expect(checkAnswer(spec, null)).toEqual({ ok: false, problem: "the answer had no text" });
	});
});

describe("compileOutputSchema", () => {
	it.each([
		[{ type: "strin" }],
		[{ properties: [] }],
		[{ $ref: "https://example.com/s.json" }],
		[{ type: "string", pattern: "(a)\\1" }],
		[{ type: "string", pattern: "x".repeat(70_000) }],
		["object"],
		[null],
	])("refuses %j with 400 invalid_output_schema", (schema) => {
		expect(() => compileOutputSchema(schema)).toThrowError(
			expect.objectContaining({ status: 400, code: "invalid_output_schema" }),
		);
	});

	it("puts the schema in the instruction and in the repair prompt", () => {
		expect(instruction(spec)).toContain('"pattern":"^[A-Z]{3}$"');
		expect(repairPrompt(spec, "the answer held no JSON value")).toMatch(
			/^\[pi-gateway structured output\] Your last answer was not usable: the answer held no JSON value\./,
		);
	});
});

// An attacker's review (issue 31): schemas and answers that crashed, froze or bloated the gateway,
// or let one tenant's schema reach another's.
describe("hostile schemas and answers", () => {
	const refused = (schema: unknown) =>
		expect(() => compileOutputSchema(schema)).toThrowError(
			expect.objectContaining({ status: 400, code: "invalid_output_schema" }),
		);

	it("refuses a schema that refers to itself without end (it overflowed the stack and ended the process)", () => {
		refused({ $ref: "#" });
		refused({ allOf: [{ $ref: "#" }] });
	});

	it("refuses uniqueItems (ajv's check is quadratic: a 300 KB answer held the event loop 25 s)", () => {
		refused({ type: "array", uniqueItems: true });
		refused({ type: "object", properties: { tags: { type: "array", uniqueItems: true } } });
		// A property that happens to be called uniqueItems is not the keyword.
		expect(() =>
			compileOutputSchema({ type: "object", properties: { uniqueItems: { type: "string" } } }),
		).not.toThrow();
	});

	it("a recursive schema and an answer nested thousands deep: a problem, not a thrown RangeError", () => {
		const tree = compileOutputSchema({ type: "array", items: { $ref: "#" } });
		const deep = `${"[".repeat(9000)}${"]".repeat(9000)}`;
		expect(checkAnswer(tree, deep)).toEqual({ ok: false, problem: "the JSON nests deeper than 128 levels" });
		expect(checkAnswer(tree, "[[[]],[]]")).toEqual({ ok: true, value: [[[]], []] });
	});

	it("schemas of different callers do not share $id: the same $id twice compiles, and a $ref to another's is unresolved", () => {
		const id = "https://schemas.example/order";
		compileOutputSchema({ $id: id, type: "object", required: ["bob"] });
		const alice = compileOutputSchema({ $id: id, type: "object", required: ["alice"] });
		expect(checkAnswer(alice, '{"alice": 1}')).toEqual({ ok: true, value: { alice: 1 } });
		refused({ $ref: id });
	});
});
