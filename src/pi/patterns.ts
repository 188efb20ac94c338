import type { z } from "@hono/zod-openapi";

/**
 * A string checked by `regex`, documented with a `pattern` every validator reads alike. zod writes
 * a flagged regex as `source/flags`, which matches nothing anywhere else; the bare source is
 * ECMA-262, and a unicode property class is spelled out as code point ranges, which Python's `re`
 * and Go's RE2 compile too (`\p{…}` is ECMA-262 unicode mode only).
 */
export function matching<T extends z.ZodString>(schema: T, regex: RegExp, message?: string) {
	if (regex.flags.replace("u", "") !== "") throw new Error(`pattern ${regex} has flags a spec cannot carry`);
	return schema.regex(regex, message).openapi({ pattern: portablePattern(regex.source) });
}

/** Unicode general categories as ranges (Cc, the control characters, is fixed by Unicode's stability policy). */
const propertyRanges: Record<string, string> = { "\\p{Cc}": "\\x00-\\x1F\\x7F-\\x9F" };

export function portablePattern(source: string): string {
	// Ranges stand in for an escape only inside a character class.
	const spelled = source.replace(/\[[^\]]*\]/g, (cls) =>
		cls.replace(/\\p\{\w+\}/g, (property) => propertyRanges[property] ?? property),
	);
	if (/\\[pP]\{/.test(spelled)) throw new Error(`no portable spelling for the property escape in ${source}`);
	return spelled;
}
