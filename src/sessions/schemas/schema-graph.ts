import { RE2JS } from "re2js";
import { isObject, jsonSize, refResolver, SchemaRefusal } from "./schema-refs.ts";

export { SchemaRefusal };

/**
 * A caller's JSON Schema as a graph the gateway can bound before any validator sees it (issue 41:
 * 1.5 KB of `$defs`, each an `anyOf` of two `$ref`s to the next, cost 2^21 checks of one value and
 * held the event loop 30 s). Each schema object is a node; its edges say where its subschemas apply:
 * at the same place in the value (allOf, anyOf, oneOf, not, if/then/else, dependentSchemas, $ref),
 * at a member (properties, additionalProperties, patternProperties, unevaluatedProperties, and
 * propertyNames on the key) or at an item (prefixItems, items, contains, unevaluatedItems).
 *
 * `$ref`s are followed where schema-refs.ts resolves them, so a validator never reaches a part
 * the bound did not count.
 */

export interface SchemaNode {
	/** Subschemas checked at the same place in the value. */
	same: number[];
	/** A member's value is checked against at most one of these (properties[k], else additionalProperties). */
	memberSlots: number[];
	/** …and against every one of these (patternProperties, unevaluatedProperties). */
	memberAlways: number[];
	/** Checked against each member's key (propertyNames), -1 for none. */
	names: number;
	/** An item is checked against at most one of these (prefixItems[i], else items). */
	itemSlots: number[];
	/** …and against every one of these (contains, unevaluatedItems). */
	itemAlways: number[];
	/** The work of one check at one place, besides subschemas: a call and an error, then the JSON values in the object's own keywords. */
	weight: number;
	/** The work per character of a string there: its pattern's RE2 program, length keywords. */
	perChar: number;
	/** The work per member or item around its own check (key tests, loop), and per key character. */
	memberOverhead: number;
	itemOverhead: number;
	keyChars: number;
	/** Subschemas compiled into this one's code (every applicator but $ref), the characters each adds to the schema path; its keywords. */
	inPlace: number[];
	inPlaceChars: number[];
	keywords: number;
	/** The node its `$ref` points to (-1 for none), and the length of the $ref (its target's path starts there). */
	ref: number;
	refChars: number;
	unevaluated: boolean;
}

export interface GraphOptions {
	/** "re2": patterns must be RE2 programs of bounded size; "refuse": no pattern at all (a validator with backtracking regexes runs them). */
	patterns: "re2" | "refuse";
	/** Nesting of the schema's JSON, in levels. */
	maxNesting: number;
	/** RE2 instructions of one pattern, and of all patterns together. */
	maxPatternProgram: number;
	maxPatternPrograms: number;
}

export interface SchemaGraph {
	nodes: SchemaNode[];
	/** Compiled patterns by source (the validator takes them from here, not compiling twice). */
	patterns: Map<string, RE2JS>;
}

/**
 * The steps of checking one schema object at one place, before its keywords: its code's frame and
 * the error it makes when it fails (about 200 ns, where a keyword tested is 5–10; ajv makes one
 * error per failing schema object, and a failing anyOf branch is one even when the anyOf passes).
 */
export const evaluationSteps = 20;

const annotations = new Set([
	"title",
	"description",
	"$comment",
	"examples",
	"default",
	"deprecated",
	"readOnly",
	"writeOnly",
	"format",
	"contentMediaType",
	"contentEncoding",
	"contentSchema",
]);

/** A node with no subschema: one check. */
const leaf = (): SchemaNode => ({
	...{ same: [], memberSlots: [], memberAlways: [], names: -1, itemSlots: [], itemAlways: [] },
	...{ weight: evaluationSteps, perChar: 0, memberOverhead: 0, itemOverhead: 0, keyChars: 0 },
	...{ inPlace: [], inPlaceChars: [], keywords: 0, ref: -1, refChars: 0, unevaluated: false },
});

export function schemaGraph(root: unknown, options: GraphOptions): SchemaGraph {
	const resolve = refResolver(root, options.maxNesting);
	const nodes: SchemaNode[] = [];
	const ids = new Map<object, number>();
	const queue: Record<string, unknown>[] = [];
	const patterns = new Map<string, RE2JS>();
	let programs = 0;
	// true and false are leaves of their own: one check, no subschema.
	nodes.push(leaf(), leaf());
	const id = (schema: unknown, at: string): number => {
		if (typeof schema === "boolean") return schema ? 0 : 1;
		if (!isObject(schema)) throw new SchemaRefusal(`${at}: a schema is an object (or true/false)`);
		let n = ids.get(schema);
		if (n === undefined) {
			n = nodes.push(leaf()) - 1;
			ids.set(schema, n);
			queue.push(schema);
		}
		return n;
	};
	const program = (source: string, at: string): number => {
		if (options.patterns === "refuse")
			throw new SchemaRefusal(
				`${at}: patterns are not supported here (the validator runs them with a backtracking engine)`,
			);
		let compiled = patterns.get(source);
		if (!compiled) {
			if (source.length > options.maxPatternProgram)
				throw new SchemaRefusal(`${at}: longer than ${options.maxPatternProgram} characters`);
			try {
				compiled = RE2JS.compile(source);
			} catch (error) {
				throw new SchemaRefusal(`${at}: not an RE2 pattern (${(error as Error).message})`);
			}
			const size = compiled.programSize();
			if (size > options.maxPatternProgram)
				throw new SchemaRefusal(
					`${at}: an RE2 program of ${size} instructions, over the ${options.maxPatternProgram} allowed`,
				);
			programs += size;
			if (programs > options.maxPatternPrograms)
				throw new SchemaRefusal(`its patterns take more than ${options.maxPatternPrograms} RE2 instructions together`);
			patterns.set(source, compiled);
		}
		return compiled.programSize();
	};
	id(root, "(root)");
	for (let next = 0; next < queue.length; next++) {
		const s = queue[next] as Record<string, unknown>;
		const node = nodes[ids.get(s) as number] as SchemaNode;
		// Each subschema costs its parent a check (ajv writes one per slot), besides its own work.
		const add = (list: number[], value: unknown, at: string) => {
			const n = id(value, at);
			list.push(n);
			node.inPlace.push(n);
			node.inPlaceChars.push(at.length + 1);
			node.weight++;
		};
		const each = (list: number[], value: unknown, at: string) => {
			if (Array.isArray(value)) for (const [i, v] of value.entries()) add(list, v, `${at}/${i}`);
			else if (isObject(value)) for (const [k, v] of Object.entries(value)) add(list, v, `${at}/${k}`);
			else throw new SchemaRefusal(`${at}: a list or an object of schemas`);
		};
		const properties = isObject(s.properties) ? Object.keys(s.properties).length : 0;
		for (const [k, v] of Object.entries(s)) {
			// Annotations are neither compiled into code nor checked (nor is `format`: formats are not checked).
			if (annotations.has(k)) continue;
			node.keywords++;
			node.weight++;
			switch (k) {
				case "$defs":
				case "definitions":
					break;
				case "allOf":
				case "anyOf":
				case "oneOf":
				case "dependentSchemas":
					each(node.same, v, k);
					break;
				case "dependencies":
					// Arrays are property dependencies (like required); the rest are schemas.
					for (const [name, dep] of Object.entries(isObject(v) ? v : {}))
						if (Array.isArray(dep)) node.weight += dep.length + 1;
						else add(node.same, dep, `dependencies/${name}`);
					break;
				case "not":
				case "if":
				case "then":
				case "else":
					add(node.same, v, k);
					break;
				case "$ref":
					if (typeof v !== "string") break;
					node.ref = id(resolve(v), k);
					node.refChars = v.length;
					node.same.push(node.ref);
					break;
				case "properties":
					each(node.memberSlots, v, k);
					break;
				case "additionalProperties":
					add(node.memberSlots, v, k);
					// ajv tests a key against up to 8 property names, then looks it up.
					node.memberOverhead += 1 + Math.min(properties, 8);
					break;
				case "patternProperties":
					each(node.memberAlways, v, k);
					for (const source of Object.keys(v as object)) {
						node.keyChars += program(source, `patternProperties/${source}`);
						node.memberOverhead++;
					}
					break;
				case "unevaluatedProperties":
					node.unevaluated = true;
					add(node.memberAlways, v, k);
					node.memberOverhead += 1 + properties;
					break;
				case "unevaluatedItems":
					node.unevaluated = true;
					add(node.itemAlways, v, k);
					node.itemOverhead++;
					break;
				case "propertyNames":
					node.names = id(v, k);
					node.inPlace.push(node.names);
					node.inPlaceChars.push(k.length + 1);
					node.memberOverhead++;
					break;
				case "prefixItems":
				case "items":
					if (k === "items" && !Array.isArray(v)) add(node.itemSlots, v, k);
					else each(node.itemSlots, v, k);
					node.itemOverhead++;
					break;
				case "contains":
					add(node.itemAlways, v, k);
					node.itemOverhead++;
					break;
				case "pattern":
					if (typeof v === "string") node.perChar += program(v, "pattern");
					break;
				case "minLength":
				case "maxLength":
					node.perChar++;
					break;
				default:
					node.weight += jsonSize(v) - 1;
			}
		}
	}
	return { nodes, patterns };
}
