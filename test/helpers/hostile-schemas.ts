/**
 * The worst schemas found for issue 41 item 3 (one request holding the event loop): each cost the
 * old gateway seconds of one thread or gigabytes, to compile or to check one small answer against.
 * The e2e test sends them as one principal while another lists its sessions; bench/schema-stall.ts
 * sends them in a loop and measures the other principal's GET.
 */

/** n `$defs`, each an `anyOf` of two `$ref`s to the next: 2^n checks of one value (1.5 KB at n = 21). */
export function anyOfChain(n: number, leaf: unknown = { type: "string" }): Record<string, unknown> {
	const $defs: Record<string, unknown> = {};
	for (let i = 0; i < n; i++)
		$defs[`d${i}`] = { anyOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
	$defs[`d${n}`] = leaf;
	return { $ref: "#/$defs/d0", $defs };
}

const properties = (n: number, leaf: () => unknown) =>
	Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, leaf()]));

/** Each a schema an old gateway compiled, or checked an answer against, for seconds or gigabytes. */
export const hostileOutputSchemas: [string, unknown][] = [
	["21 $defs, each an anyOf of two $refs to the next (the issue's)", anyOfChain(21)],
	[
		"the same chain as allOf, 16 deep",
		(() => {
			const s = anyOfChain(16);
			for (const def of Object.values(s.$defs as Record<string, Record<string, unknown>>))
				if (def.anyOf) [def.allOf, def.anyOf] = [def.anyOf, undefined];
			return JSON.parse(JSON.stringify(s));
		})(),
	],
	// Each level of the value doubles the work: 2^d at depth d, a 40-deep answer of 80 characters.
	[
		"an array whose items are an anyOf of two refs to the root",
		{ anyOf: [{ items: { $ref: "#" } }, { items: { $ref: "#" } }] },
	],
	// ajv used to write the 400-property target into each of the 150 places (inlined refs).
	[
		"one 400-property $def referred to from 150 places",
		{
			$defs: { big: { type: "object", properties: properties(400, () => ({ type: "string" })) } },
			anyOf: Array.from({ length: 150 }, () => ({ $ref: "#/$defs/big" })),
		},
	],
	// Every keyword below a 40 KB name is written with the name in its path: 16 MB of code.
	[
		"a 40 KB property name over 400 properties",
		{
			type: "object",
			properties: {
				["n".repeat(40_000)]: { type: "object", properties: properties(400, () => ({ type: "integer" })) },
			},
		},
	],
	// With unevaluated* on, ajv merged every target's names into every $ref (and overflowed its stack).
	[
		"unevaluatedProperties over 300 $refs to a 100-property $def",
		{
			$defs: { t: { type: "object", properties: properties(100, () => ({ type: "string" })) } },
			allOf: Array.from({ length: 300 }, () => ({ $ref: "#/$defs/t" })),
			unevaluatedProperties: false,
		},
	],
	["a schema that refers to itself without end", { allOf: [{ $ref: "#" }] }],
	// A member's value reaches three places through patternProperties: 3^d at depth d.
	[
		"patternProperties that all refer back to the root",
		{
			type: "object",
			patternProperties: { "^a": { $ref: "#" }, "^ab": { $ref: "#" }, "^abc": { $ref: "#" } },
		},
	],
];

/** Tool parameters (pi checks the model's arguments against them) that pi could not check in bounded time. */
export const hostileToolParameters: [string, Record<string, unknown>][] = [
	[
		"21 $defs of anyOf chains",
		{ type: "object", properties: { x: { $ref: "#/$defs/d0" } }, $defs: anyOfChain(21).$defs },
	],
	// pi runs `pattern` as a JavaScript RegExp: (a+)+$ backtracks exponentially on "aaaa…!".
	["a backtracking pattern", { type: "object", properties: { x: { type: "string", pattern: "^(a+)+$" } } }],
	["patternProperties", { type: "object", patternProperties: { "^(a|a)*$": { type: "string" } } }],
];
