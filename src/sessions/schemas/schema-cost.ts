import { type GraphOptions, type SchemaGraph, type SchemaNode, SchemaRefusal, schemaGraph } from "./schema-graph.ts";

export { SchemaRefusal };

/**
 * What checking a value against a caller's schema can cost, known before any validator runs
 * (issue 41 item 3), in steps of about 10 ns: a keyword tested at one place in the value is one, a
 * value of an enum or const one, a schema object checked there 20 (its call, and the error it makes
 * when it fails), a pattern's RE2 instruction one per character it reads.
 *
 * - Compiling: every schema object is compiled once in place and once more for each `$ref` that
 *   targets it (ajv with `inlineRefs: false`), so the compile work is the sum of those trees'
 *   keywords, each weighed by the length of its schema path (compileWork).
 * - One place in a value: the subschemas that apply at the same place add up (allOf, anyOf, oneOf,
 *   not, if/then/else, dependentSchemas, $ref): a chain of n `anyOf`s of two `$ref`s to the next is
 *   2^n. A member or item gets the most expensive of its exclusive slots (properties[k] or
 *   additionalProperties; prefixItems[i] or items) plus every subschema that applies to all of them
 *   (patternProperties, contains, unevaluated…). This is computed for each depth of the value, so a
 *   recursive schema (`items: {$ref: "#"}`) costs what its deepest answer could.
 * - A whole answer: the sum, over its values, of the cost at their depth, plus the characters of
 *   each string and key times the pattern work per character there. Known once the answer is parsed,
 *   before it is checked.
 */

export interface CostLimits extends GraphOptions {
	/** Keywords compiled, counting a $ref target's tree once more per distinct target. */
	maxCompileUnits: number;
	/** Steps at one place in a value. */
	maxLocationCost: number;
	/** How deep a value's arrays and objects may nest (deeper values are not checked). */
	maxDepth: number;
}

export interface SchemaCost {
	graph: SchemaGraph;
	compileUnits: number;
	/** The most steps one place in a value can cost. */
	locationCost: number;
	/** Steps at one place at depth d (0: the value itself), and per character of a string or key there. */
	atDepth: Float64Array;
	perChar: Float64Array;
	/** unevaluatedProperties/unevaluatedItems appear: the validator must track what was evaluated. */
	unevaluated: boolean;
}

/** The costs of `schema`, or a SchemaRefusal that names the bound it is over and by how much. */
export function schemaCost(schema: unknown, limits: CostLimits): SchemaCost {
	const graph = schemaGraph(schema, limits);
	const { nodes } = graph;
	const root = typeof schema === "boolean" ? (schema ? 0 : 1) : 2;
	const order = sameOrder(nodes);
	const unevaluated = nodes.some((n) => n.unevaluated);
	const compileUnits = compileWork(nodes, root, unevaluated);
	if (compileUnits > limits.maxCompileUnits)
		throw new SchemaRefusal(
			`compiling it takes ${compileUnits} steps (schema objects and keywords, once more for each $ref target), over the ${limits.maxCompileUnits} allowed`,
		);
	const { atDepth, perChar } = depthCosts(nodes, order, root, limits);
	const locationCost = Math.max(...atDepth);
	return { graph, compileUnits, locationCost, atDepth, perChar, unevaluated };
}

const cycle = () =>
	new SchemaRefusal(
		"it refers to itself without end: a $ref (or allOf/anyOf/oneOf/not/if) cycle that never moves into a property or item",
	);

/** The nodes, each after every node it checks at the same place; a cycle there is refused. */
function sameOrder(nodes: SchemaNode[]): number[] {
	const state = new Uint8Array(nodes.length); // 0 unseen, 1 on the path, 2 done
	const order: number[] = [];
	for (let start = 0; start < nodes.length; start++) {
		if (state[start] !== 0) continue;
		state[start] = 1;
		const path: [number, number][] = [[start, 0]];
		while (path.length > 0) {
			const top = path[path.length - 1] as [number, number];
			const same = (nodes[top[0]] as SchemaNode).same;
			if (top[1] < same.length) {
				const next = same[top[1]++] as number;
				if (state[next] === 1) throw cycle();
				if (state[next] === 0) {
					state[next] = 1;
					path.push([next, 0]);
				}
			} else {
				state[top[0]] = 2;
				order.push(top[0]);
				path.pop();
			}
		}
	}
	return order;
}

/**
 * ajv's code for a tree: each schema object's keywords, each written with the schema path to it (a
 * 40 KB property name over 400 properties made 16 MB of code and a 700 ms compile), so an object
 * weighs (1 + keywords) × (1 + path characters / 512). Per node, memoised: K, the sum of (1 +
 * keywords) in its tree; B, the sum of those times the path inside the tree; U, the sum of K over
 * the tree (what ajv writes again at every level when it tracks evaluated names).
 */
function compileWork(nodes: SchemaNode[], root: number, unevaluated: boolean): number {
	const K = new Float64Array(nodes.length).fill(-1);
	const B = new Float64Array(nodes.length);
	const U = new Float64Array(nodes.length);
	const tree = (start: number, pathChars: number): number => {
		const path: [number, number][] = [[start, 0]];
		while (path.length > 0) {
			const top = path[path.length - 1] as [number, number];
			const node = nodes[top[0]] as SchemaNode;
			if (top[1] < node.inPlace.length) {
				const child = node.inPlace[top[1]++] as number;
				if (K[child] === -1) path.push([child, 0]);
				continue;
			}
			let k = 1 + node.keywords;
			let b = 0;
			let u = 0;
			for (const [i, child] of node.inPlace.entries()) {
				k += K[child] as number;
				b += (B[child] as number) + (node.inPlaceChars[i] as number) * (K[child] as number);
				u += U[child] as number;
			}
			K[top[0]] = k;
			B[top[0]] = b;
			U[top[0]] = u + k;
			path.pop();
		}
		const k = K[start] as number;
		const units = k + (pathChars * k + (B[start] as number)) / 512;
		return unevaluated ? units + (U[start] as number) : units;
	};
	let units = tree(root, 1);
	const targets = new Set<number>();
	for (const node of nodes) {
		if (node.ref < 0) continue;
		// With unevaluated* on, ajv merges what a target evaluated into every place that refers to it.
		if (unevaluated) units += K[node.ref] === -1 ? tree(node.ref, node.refChars) : (K[node.ref] as number);
		if (!targets.has(node.ref)) units += tree(node.ref, node.refChars);
		targets.add(node.ref);
	}
	return Math.ceil(units);
}

const most = (list: number[], at: Float64Array) => list.reduce((m, n) => Math.max(m, at[n] as number), 0);
const sum = (list: number[], at: Float64Array) => list.reduce((s, n) => s + (at[n] as number), 0);

/** Steps at one place at each depth, and per character there, for the root; refused over the bound. */
function depthCosts(nodes: SchemaNode[], order: number[], root: number, limits: CostLimits) {
	const atDepth = new Float64Array(limits.maxDepth + 1);
	const perChar = new Float64Array(limits.maxDepth + 1);
	const n0 = new Float64Array(nodes.length);
	const p0 = new Float64Array(nodes.length);
	let prevN = n0;
	let prevP = p0;
	for (let d = 0; d <= limits.maxDepth; d++) {
		const curN = d === 0 ? n0 : new Float64Array(nodes.length);
		const curP = d === 0 ? p0 : new Float64Array(nodes.length);
		let any = false;
		for (const i of order) {
			const node = nodes[i] as SchemaNode;
			let n: number;
			let p: number;
			if (d === 0) {
				n = node.weight;
				p = node.perChar;
			} else {
				const first = d === 1;
				const names = node.names >= 0 && first ? node.names : -1;
				const memberN = most(node.memberSlots, prevN) + sum(node.memberAlways, prevN);
				const memberP = most(node.memberSlots, prevP) + sum(node.memberAlways, prevP);
				const itemN = most(node.itemSlots, prevN) + sum(node.itemAlways, prevN);
				const itemP = most(node.itemSlots, prevP) + sum(node.itemAlways, prevP);
				n = Math.max(
					memberN + (first ? node.memberOverhead : 0) + (names >= 0 ? (n0[names] as number) : 0),
					itemN + (first ? node.itemOverhead : 0),
				);
				p = Math.max(memberP + (first ? node.keyChars : 0) + (names >= 0 ? (p0[names] as number) : 0), itemP);
			}
			for (const s of node.same) {
				n += curN[s] as number;
				p += curP[s] as number;
			}
			curN[i] = n;
			curP[i] = p;
			any ||= n > 0 || p > 0;
		}
		atDepth[d] = curN[root] as number;
		perChar[d] = curP[root] as number;
		if ((atDepth[d] as number) > limits.maxLocationCost)
			throw new SchemaRefusal(
				`checking one place in a value${d > 0 ? ` ${d} level${d > 1 ? "s" : ""} deep` : ""} could take ${fmt(atDepth[d] as number)} steps, over the ${limits.maxLocationCost} allowed (the subschemas that apply at one place add up: allOf, anyOf, oneOf, not, if/then/else, $ref)`,
			);
		// Nothing applies this deep anywhere: nothing applies deeper either.
		if (!any) break;
		prevN = curN;
		prevP = curP;
	}
	return { atDepth, perChar };
}

const fmt = (n: number) => (n < 1e15 ? String(Math.round(n)) : n.toExponential(2));

export type AnswerCost = { steps: number } | { tooDeep: true } | { over: number };

/**
 * The steps checking `value` against the schema can take, walked without recursion, stopping as soon
 * as the value is deeper than the cost is known for or its steps pass `budget`.
 */
export function answerCost(cost: SchemaCost, value: unknown, budget: number): AnswerCost {
	let steps = 0;
	const stack: [unknown, number, number][] = [[value, 0, 0]];
	while (stack.length > 0) {
		const [v, d, keyChars] = stack.pop() as [unknown, number, number];
		const chars = keyChars + (typeof v === "string" ? v.length : 0);
		steps += (cost.atDepth[d] as number) + (cost.perChar[d] as number) * chars;
		if (steps > budget) return { over: steps };
		if (v === null || typeof v !== "object") continue;
		if (d + 1 >= cost.atDepth.length) return { tooDeep: true };
		if (Array.isArray(v)) for (const item of v) stack.push([item, d + 1, 0]);
		else for (const [k, item] of Object.entries(v)) stack.push([item, d + 1, k.length]);
	}
	return { steps };
}

/**
 * Why a schema asking for `uniqueItems: true` anywhere (at most 64 KiB) is refused, or undefined:
 * every checker (ajv, pi's, the console's) compares each pair of items for it, so its cost is
 * quadratic in the length of an array the model writes. outputSchema and client tools' parameters.
 */
export function uniqueItemsRefusal(schema: unknown): string | undefined {
	const stack: unknown[] = [schema];
	while (stack.length > 0) {
		const node = stack.pop();
		if (node === null || typeof node !== "object") continue;
		if (!Array.isArray(node) && (node as Record<string, unknown>).uniqueItems === true)
			return "uniqueItems is not supported (checking it takes time quadratic in the array's length)";
		for (const child of Array.isArray(node) ? node : Object.values(node)) stack.push(child);
	}
	return undefined;
}
