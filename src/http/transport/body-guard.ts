import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "./openapi.ts";
import { ApiError } from "./problem.ts";
import { routePattern } from "./route-pattern.ts";

/** Deeper than any command pi knows (images are 3 levels); 10,000 levels made JSON.stringify throw. */
export const maxJsonDepth = 64;
/**
 * Values (object members, array items) in one body at most: far more than any operation takes (a
 * prompt's text and images are single strings; an outputSchema is at most 64 KiB), and what JSON.parse,
 * zod and JSON.stringify get through in milliseconds. 500,000 members below the size limit held the
 * event loop for everyone 2–9 s before any check saw them (an attacker's review).
 */
export const maxJsonValues = 20_000;

const jsonType = /^application\/([\w.-]+\+)?json\s*(;|$)/i;
const bodyMethods = new Set(["POST", "PUT", "PATCH"]);

/** The operations that declare a JSON request body, read from the OpenAPI document once routes exist. */
export class BodyRoutes {
	#routes: { method: string; path: RegExp; required: boolean }[] = [];
	#raw: { method: string; path: RegExp }[] = [];

	load(document: { paths?: Record<string, Record<string, unknown>> }): void {
		this.#routes = [];
		this.#raw = [];
		for (const [template, operations] of Object.entries(document.paths ?? {})) {
			const pattern = routePattern(template);
			for (const [method, operation] of Object.entries(operations)) {
				const body = (operation as { requestBody?: { required?: boolean; content?: object } }).requestBody;
				if (body === undefined) continue;
				// Raw bodies (a workspace upload) take any content type.
				if (!(body.content && "application/json" in body.content)) {
					this.#raw.push({ method: method.toUpperCase(), path: pattern });
					continue;
				}
				this.#routes.push({
					method: method.toUpperCase(),
					path: pattern,
					required: !!body.required,
				});
			}
		}
	}

	/** The operation reads its body raw (an upload), whatever its content type says. */
	takesRaw(method: string, path: string): boolean {
		return this.#raw.some((r) => r.method === method && r.path.test(path));
	}

	/** `undefined`: the operation takes no body; otherwise whether its body is required. */
	find(method: string, path: string): { required: boolean } | undefined {
		return this.#routes.find((r) => r.method === method && r.path.test(path));
	}
}

/**
 * Nesting depth of JSON text and how many values it holds past the first of each object or array
 * (its commas), brackets and commas inside strings not counted; stops counting past either limit.
 */
export function jsonShape(text: string, limits: { depth: number; values: number }): { depth: number; values: number } {
	let depth = 0;
	let deepest = 0;
	let values = 0;
	let inString = false;
	for (let i = 0; i < text.length; i++) {
		const ch = text.charCodeAt(i);
		if (inString) {
			if (ch === 92)
				i++; // backslash: skip the escaped character
			else if (ch === 34) inString = false;
		} else if (ch === 34) inString = true;
		else if (ch === 44) {
			if (++values > limits.values) break;
		} else if (ch === 91 || ch === 123) {
			values++;
			if (++depth > deepest) deepest = depth;
			if (deepest > limits.depth || values > limits.values) break;
		} else if (ch === 93 || ch === 125) depth--;
	}
	return { depth: deepest, values };
}

/**
 * Bodies as the routes declare them, checked before any validator or handler sees them:
 * - an operation with a JSON body schema needs `Content-Type: application/json`, even with an
 *   empty body. A browser's no-cors form or fetch can only send text/plain, form or no type
 *   at all, so this closes cross-site request forgery of those operations (415). One exception,
 *   so that spec and gateway agree: an operation whose body is optional may be called with no
 *   body at all (what generated SDKs, Prism and curl do with an optional body) when the request
 *   carries an Authorization header, which a cross-site page cannot add without a CORS preflight.
 *   A gateway without a token (`--no-auth`) has no such header to lean on and stays strict;
 * - an empty JSON body is `{}` (an optional body may be left out);
 * - nesting deeper than `maxJsonDepth` is refused (400) before JSON.parse, so nothing recursive
 *   downstream (zod, JSON.stringify to pi) can blow the stack, and so is a body of more than
 *   `maxJsonValues` values, so no body holds the event loop for everyone while it is parsed;
 * - a JSON content type on an operation that takes a raw body (a workspace upload) is left for
 *   the operation to read (it streams the body).
 */
export function bodyGuard(routes: BodyRoutes, options: { tokenRequired: boolean }): MiddlewareHandler<AppEnv> {
	return async function bodyGuardMiddleware(c, next) {
		if (!bodyMethods.has(c.req.method)) return next();
		const type = c.req.header("content-type");
		const isJson = type !== undefined && jsonType.test(type);
		if (!isJson) {
			const route = routes.find(c.req.method, c.req.path);
			const noBody =
				type === undefined &&
				c.req.header("transfer-encoding") === undefined &&
				Number(c.req.header("content-length") ?? 0) === 0;
			const optionalLeftOut =
				route !== undefined && !route.required && noBody && options.tokenRequired && !!c.req.header("authorization");
			if (route && !optionalLeftOut) {
				throw new ApiError(
					415,
					"unsupported_media_type",
					"Send the request body as JSON (Content-Type: application/json), an empty one included",
				);
			}
			return next();
		}
		if (routes.takesRaw(c.req.method, c.req.path)) return next();
		const text = await c.req.text();
		if (text.trim() === "") {
			// Hono's validators read the body through this cache: an empty body parses as `{}`.
			(c.req as unknown as { bodyCache: { text?: Promise<string> } }).bodyCache.text = Promise.resolve("{}");
			return next();
		}
		const shape = jsonShape(text, { depth: maxJsonDepth, values: maxJsonValues });
		if (shape.depth > maxJsonDepth)
			throw new ApiError(400, "json_too_deep", `JSON bodies may nest at most ${maxJsonDepth} levels`);
		if (shape.values > maxJsonValues)
			throw new ApiError(
				400,
				"json_too_large",
				`JSON bodies may hold at most ${maxJsonValues} values (object members and array items)`,
			);
		return next();
	};
}
