import { z } from "@hono/zod-openapi";

/** `limit` and `cursor` of a paged list; `cursor` is an earlier page's `nextCursor` (what it means is the list's). */
export function pageQuery(cursorMeans: string) {
	return z.object({
		limit: z.coerce
			.number()
			.int()
			.min(1)
			.max(500)
			.default(100)
			.openapi({ description: "How many items one page holds at most", example: 100 }),
		cursor: z
			.string()
			.regex(/^\d+$/, "a nextCursor from an earlier page")
			.optional()
			.openapi({ description: `\`nextCursor\` of an earlier page: ${cursorMeans}` }),
	});
}

/**
 * `?wait=N`: whole seconds (0–300) a long-poll holds an empty answer, as `wait` on runs is: one
 * type for every generator. z.coerce documents itself as nullable; a query string cannot carry null.
 */
export function longPollWait(description: string) {
	return z.coerce
		.number()
		.int()
		.min(0)
		.max(300)
		.optional()
		.openapi({ type: "integer", minimum: 0, maximum: 300, description, example: 30 });
}

/** The `{id}` of every session-scoped path, shared by all feature folders. */
export const SessionParams = z.object({
	id: z.string().openapi({
		param: { name: "id", in: "path" },
		description: "The session's id, as `POST /v1/sessions` answered it",
		example: "ses_Qm9wYXJ0aWFs",
	}),
});

/** A path segment decoded, or undefined when its percent-escapes are malformed (never a throw). */
export function decodedSegment(raw: string): string | undefined {
	try {
		return decodeURIComponent(raw);
	} catch {
		return undefined;
	}
}
