/**
 * Where a caller's `$ref`s point, resolved as ajv would and only inside the schema: `#`, a JSON
 * pointer `#/…` (own keys only, never into enum/const/default/examples), a `#name` of a `$anchor`,
 * or either after the root's own `$id`. What cannot be followed is refused (SchemaRefusal), so a
 * validator never reaches a part the bound did not count: an `$id` below the root (it moves where
 * `#…` points), `$dynamicRef`/`$recursiveRef` (their target is only known while checking), an
 * anchor named twice, a pointer into data.
 */

/** Why a schema is refused, in words a client can act on. */
export class SchemaRefusal extends Error {}

/** Keywords whose values are data, never schemas: nothing inside them is a keyword. */
const dataKeywords = new Set(["enum", "const", "default", "examples"]);
/** Keywords whose values map names to schemas: their keys are names, not keywords. */
const mapKeywords = new Set([
	"properties",
	"patternProperties",
	"$defs",
	"definitions",
	"dependentSchemas",
	"dependencies",
]);
const dynamicKeywords = ["$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor"];

export const isObject = (v: unknown): v is Record<string, unknown> =>
	typeof v === "object" && v !== null && !Array.isArray(v);
const own = (o: object, k: string): unknown => (Object.hasOwn(o, k) ? (o as Record<string, unknown>)[k] : undefined);

/** JSON values in `value` (an enum of 1000 strings weighs 1001: ajv compares with each). */
export function jsonSize(value: unknown): number {
	let n = 0;
	const stack = [value];
	while (stack.length > 0) {
		const v = stack.pop();
		n++;
		if (typeof v === "object" && v !== null) for (const c of Object.values(v)) stack.push(c);
	}
	return n;
}

type Position = "schema" | "map" | "data";

/**
 * One pass over the document: nesting, anchors, objects that are data, and the refusals that need
 * no graph ($id below the root, dynamic references).
 */
function scan(root: unknown, maxNesting: number) {
	const anchors = new Map<string, object>();
	const data = new Set<object>();
	const stack: [unknown, number, Position][] = [[root, 1, "schema"]];
	while (stack.length > 0) {
		const [v, depth, position] = stack.pop() as [unknown, number, Position];
		if (typeof v !== "object" || v === null) continue;
		if (depth > maxNesting) throw new SchemaRefusal(`its JSON nests deeper than ${maxNesting} levels`);
		if (position === "data") data.add(v);
		if (position === "schema" && isObject(v)) {
			if (v !== root && typeof own(v, "$id") === "string")
				throw new SchemaRefusal("an $id below the root is not supported (refs resolve from the root)");
			for (const k of dynamicKeywords)
				if (own(v, k) !== undefined)
					throw new SchemaRefusal(`${k} is not supported (its target is only known while checking)`);
			const anchor = own(v, "$anchor");
			if (typeof anchor === "string") {
				if (anchors.has(anchor)) throw new SchemaRefusal(`the $anchor ${JSON.stringify(anchor)} is named twice`);
				anchors.set(anchor, v);
			}
		}
		for (const [k, c] of Object.entries(v)) {
			const schemaObject = position === "schema" && isObject(v);
			const next: Position =
				position === "data" || (schemaObject && dataKeywords.has(k))
					? "data"
					: schemaObject && mapKeywords.has(k)
						? "map"
						: "schema";
			stack.push([c, depth + 1, next]);
		}
	}
	return { anchors, data };
}

function decode(part: string, ref: string): string {
	try {
		return decodeURIComponent(part);
	} catch {
		throw new SchemaRefusal(`$ref ${JSON.stringify(ref)}: not a URI fragment`);
	}
}

/** The resolver of `root`'s `$ref`s, after one pass over the document (refused: see above). */
export function refResolver(root: unknown, maxNesting: number): (ref: string) => unknown {
	const { anchors, data } = scan(root, maxNesting);
	const rootId = isObject(root) && typeof root.$id === "string" ? root.$id.replace(/#$/, "") : undefined;
	return (ref: string): unknown => {
		const hash = ref.indexOf("#");
		const base = hash === -1 ? ref : ref.slice(0, hash);
		if (base !== "" && base !== rootId)
			throw new SchemaRefusal(`$ref ${JSON.stringify(ref)}: a $ref points inside the schema (#/… or #anchor)`);
		const fragment = hash === -1 ? "" : ref.slice(hash + 1);
		// Only characters a URI normaliser leaves alone, so ajv reads the same pointer as this.
		if (!/^[\w.~!$&'()*+,;=:@/%-]*$/.test(fragment))
			throw new SchemaRefusal(`$ref ${JSON.stringify(ref)}: percent-encode the fragment's other characters`);
		if (fragment === "") return root;
		if (!fragment.startsWith("/")) {
			const anchored = anchors.get(decode(fragment, ref));
			if (!anchored) throw new SchemaRefusal(`$ref ${JSON.stringify(ref)}: no $anchor of that name`);
			return anchored;
		}
		let at: unknown = root;
		for (const part of fragment.slice(1).split("/")) {
			const key = decode(part, ref).replaceAll("~1", "/").replaceAll("~0", "~");
			if (typeof at !== "object" || at === null || !Object.hasOwn(at, key))
				throw new SchemaRefusal(`$ref ${JSON.stringify(ref)}: nothing in the schema is there`);
			at = (at as Record<string, unknown>)[key];
		}
		if (typeof at !== "boolean" && (!isObject(at) || data.has(at)))
			throw new SchemaRefusal(`$ref ${JSON.stringify(ref)}: what is there is not a schema`);
		return at;
	};
}
