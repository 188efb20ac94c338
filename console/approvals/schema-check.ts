import { Validator } from "@cfworker/json-schema";

/**
 * A value against a JSON Schema, as "where: what" lines (none: it matches). Its own chunk,
 * console-schema-check.js, fetched the first time a client tool call is shown: the validator
 * (@cfworker/json-schema, no code generation, so no unsafe-eval for the CSP) stays out of the
 * first load.
 */
export function schemaProblems(schema: object, value: unknown): string[] {
	const result = new Validator(schema, "2020-12", false).validate(value);
	return result.valid ? [] : result.errors.map((e) => `${e.instanceLocation.replace(/^#/, "") || "/"}: ${e.error}`);
}
