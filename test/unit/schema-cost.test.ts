import { describe, expect, it } from "vitest";
import { ClientTool } from "../../src/sessions/dialogs/client-tools.ts";
import { checkAnswer, compileOutputSchema, maxCheckSteps } from "../../src/sessions/runs/run-output.ts";
import { anyOfChain, hostileOutputSchemas, hostileToolParameters } from "../helpers/hostile-schemas.ts";

// Issue 41 item 3: what compiling a caller's schema and checking an answer against it can cost is
// known before either runs (src/sessions/schemas/schema-cost.ts), and a schema or answer over the bound is
// refused with the bound and the figure. The e2e half is test/e2e/schema-stall.test.ts.
const refusal = (schema: unknown): string => {
	try {
		compileOutputSchema(schema);
	} catch (error) {
		expect(error).toMatchObject({ status: 400, code: "invalid_output_schema" });
		return (error as Error).message;
	}
	throw new Error("the schema was accepted");
};

describe("outputSchema: the bound, known before ajv runs", () => {
	it("refuses the issue's 21 $defs (1.5 KB, each an anyOf of two $refs to the next) with the figure", () => {
		expect(JSON.stringify(anyOfChain(21)).length).toBeLessThan(1600);
		const message = refusal(anyOfChain(21));
		expect(message).toMatch(
			/^outputSchema: checking one place in a value could take \d+ steps, over the 50000 allowed/,
		);
		expect(Number(/take (\d+) steps/.exec(message)?.[1])).toBeGreaterThanOrEqual(2 ** 21);
	});

	it.each(hostileOutputSchemas)("refuses %s, naming the bound", (_name, schema) => {
		expect(refusal(schema)).toMatch(/over the \d+ allowed|refers to itself without end/);
	});

	it("a chain's cost doubles per level: 9 levels are accepted, 10 are not", () => {
		const nine = compileOutputSchema(anyOfChain(9)).cost.locationCost;
		expect(nine).toBeLessThan(50_000);
		expect(refusal(anyOfChain(10))).toContain(`could take ${2 * nine + 43} steps, over the 50000 allowed`);
	});

	it("refuses what it cannot count: dynamic refs, an $id below the root, refs outside or into data", () => {
		expect(refusal({ $dynamicRef: "#x" })).toMatch(/\$dynamicRef is not supported/);
		expect(refusal({ $defs: { a: { $id: "https://x/a", type: "string" } } })).toMatch(/\$id below the root/);
		expect(refusal({ $ref: "#/$defs/none" })).toMatch(/nothing in the schema is there/);
		expect(refusal({ enum: [{ type: "string" }], $ref: "#/enum/0" })).toMatch(/not a schema/);
		expect(refusal({ $ref: "https://example.com/s.json" })).toMatch(/points inside the schema/);
		expect(refusal({ $defs: { a: { $anchor: "x" }, b: { $anchor: "x" } } })).toMatch(/named twice/);
		expect(refusal({ $schema: "http://json-schema.org/draft-07/schema#" })).toMatch(/2020-12/);
		expect(refusal({ type: "string", pattern: "a{1000}b{1000}" })).toMatch(/RE2 program of \d+ instructions/);
	});

	it("a property named like a keyword is a name, not the keyword", () => {
		const spec = compileOutputSchema({
			type: "object",
			properties: { $dynamicRef: { type: "string" }, $id: { type: "integer" }, $anchor: { type: "boolean" } },
		});
		expect(checkAnswer(spec, '{"$dynamicRef": "x", "$id": 1, "$anchor": true}')).toMatchObject({ ok: true });
		expect(checkAnswer(spec, '{"$id": "x"}')).toMatchObject({ ok: false });
	});

	it("keeps ordinary schemas: recursion, unions of $refs, anchors, the root's $id, escaped pointers", () => {
		const tree = compileOutputSchema({
			type: "object",
			properties: { v: { type: "integer" }, children: { type: "array", items: { $ref: "#" } } },
			required: ["v"],
		});
		let deep: unknown = { v: 0 };
		for (let i = 0; i < 40; i++) deep = { v: i, children: [deep, { v: -i }] };
		expect(checkAnswer(tree, JSON.stringify(deep))).toMatchObject({ ok: true });
		const kinds = Array.from({ length: 20 }, (_, i) => `k${i}`);
		const union = compileOutputSchema({
			oneOf: kinds.map((k) => ({ $ref: `#/$defs/${k}` })),
			$defs: Object.fromEntries(
				kinds.map((k) => [k, { type: "object", properties: { kind: { const: k } }, required: ["kind"] }]),
			),
		});
		expect(checkAnswer(union, '{"kind": "k19"}')).toMatchObject({ ok: true });
		expect(checkAnswer(union, '{"kind": "k20"}')).toMatchObject({ ok: false });
		const anchored = compileOutputSchema({
			$id: "https://schemas.example/count",
			$defs: { n: { $anchor: "count", type: "integer", minimum: 0 }, "a b/c": { type: "string" } },
			properties: { n: { $ref: "#count" }, s: { $ref: "https://schemas.example/count#/$defs/a%20b~1c" } },
		});
		expect(checkAnswer(anchored, '{"n": 1, "s": "x"}')).toMatchObject({ ok: true });
		expect(checkAnswer(anchored, '{"n": -1}')).toMatchObject({ ok: false });
		expect(checkAnswer(anchored, '{"s": 1}')).toMatchObject({ ok: false });
		const closed = compileOutputSchema({
			allOf: [{ properties: { a: { type: "string" } } }],
			unevaluatedProperties: false,
		});
		expect(checkAnswer(closed, '{"a": "x"}')).toMatchObject({ ok: true });
		expect(checkAnswer(closed, '{"a": "x", "b": 1}')).toMatchObject({ ok: false });
	});

	it("annotations cost nothing: ajv compiles no code for description, title, examples or format", () => {
		const props = (extra: object) =>
			Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`p${i}`, { type: "string", ...extra }]));
		const plain = compileOutputSchema({ type: "object", properties: props({}) }).cost;
		const annotated = compileOutputSchema({
			type: "object",
			description: "An order",
			properties: props({ description: "x".repeat(200), title: "T", examples: ["a"], format: "email" }),
		}).cost;
		expect(annotated.compileUnits).toBe(plain.compileUnits);
		expect(annotated.locationCost).toBe(plain.locationCost);
	});

	it("bounds the answer too: a long array of costly items is the run's problem, not a stall", () => {
		const { $defs } = anyOfChain(9, { type: "integer" });
		const spec = compileOutputSchema({ type: "array", items: { $ref: "#/$defs/d0" }, $defs });
		const perItem = spec.cost.atDepth[1] as number;
		const fits = Array.from({ length: Math.floor((maxCheckSteps - 10) / perItem) - 1 }, () => 1);
		expect(checkAnswer(spec, JSON.stringify(fits))).toMatchObject({ ok: true });
		const over = [...fits, 1, 1, 1];
		expect(checkAnswer(spec, JSON.stringify(over))).toEqual({
			ok: false,
			problem: `the JSON is too large to check against this schema (more than ${maxCheckSteps} steps: fewer or shorter values)`,
		});
	});

	it("counts a pattern's program per character of the strings it reads", () => {
		const spec = compileOutputSchema({ type: "array", items: { type: "string", pattern: "^[a-z]{1,40}$" } });
		const perChar = spec.cost.perChar[1] as number;
		expect(perChar).toBeGreaterThan(40);
		const long = ["x".repeat(Math.ceil(maxCheckSteps / perChar) + 1)];
		expect(checkAnswer(spec, JSON.stringify(long))).toMatchObject({ ok: false, problem: /too large to check/ });
		expect(checkAnswer(spec, '["abc"]')).toMatchObject({ ok: true });
	});
});

describe("client tool parameters: the same bound, and no pattern (pi runs them as backtracking RegExps)", () => {
	const issues = (parameters: unknown) => {
		const parsed = ClientTool.safeParse({ name: "t", description: "d", parameters });
		return parsed.success ? [] : parsed.error.issues.map((i) => i.message);
	};

	it.each(hostileToolParameters)("refuses %s", (_name, parameters) => {
		expect(issues(parameters).join("\n")).toMatch(
			/^parameters.*: .*(over the \d+ allowed|patterns are not supported)/m,
		);
	});

	it("keeps ordinary parameters, $refs included", () => {
		expect(
			issues({
				type: "object",
				properties: { sku: { type: "string", minLength: 3 }, where: { $ref: "#/$defs/place" } },
				$defs: { place: { type: "object", properties: { city: { type: "string" } } } },
				required: ["sku"],
			}),
		).toEqual([]);
	});
});
