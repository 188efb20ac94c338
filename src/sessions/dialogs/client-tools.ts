import { z } from "@hono/zod-openapi";
import { type CostLimits, SchemaRefusal, schemaCost, uniqueItemsRefusal } from "../schemas/schema-cost.ts";

/**
 * Client tools: tools a session declares at create and the calling program runs. The gateway's
 * extension (extensions/client-tools.ts) registers them in pi; when the model calls one, the
 * extension opens an `editor` dialog with this title and the call as JSON in `prefill`, and the
 * gateway turns that dialog into a tool call (client-tool-calls.ts), never an approval.
 */
export const clientToolDialogTitle = "pi-gateway client tool";

/** The variable the definitions reach the extension in (it removes it at once, before any tool runs). */
export const clientToolsEnv = "PI_CLIENT_TOOLS";

/** pi's own tools (and codemode's): a client tool of one of these names would replace pi's. */
export const piToolNames: ReadonlySet<string> = new Set([
	"read",
	"bash",
	"powershell",
	"edit",
	"write",
	"grep",
	"find",
	"ls",
	"codemode",
]);

/** All definitions of a session together, as JSON: they travel in one environment variable. */
export const maxClientToolsBytes = 64 * 1024;
const maxSchemaDepth = 32;
const jsonTypes = new Set(["object", "array", "string", "number", "integer", "boolean", "null"]);

/** Why `schema` is not a JSON Schema a tool's arguments can be checked with, or undefined. */
function schemaProblem(schema: unknown, at: string, depth: number): string | undefined {
	if (depth > maxSchemaDepth) return `${at}: nested deeper than ${maxSchemaDepth}`;
	if (typeof schema === "boolean") return undefined;
	if (schema === null || typeof schema !== "object" || Array.isArray(schema))
		return `${at}: a schema is an object (or true/false)`;
	const s = schema as Record<string, unknown>;
	if ("type" in s) {
		const types = Array.isArray(s.type) ? s.type : [s.type];
		if (types.length === 0 || !types.every((t) => typeof t === "string" && jsonTypes.has(t)))
			return `${at}.type: one of ${[...jsonTypes].join(", ")} (or a list of them)`;
	}
	if ("required" in s && !(Array.isArray(s.required) && s.required.every((r) => typeof r === "string")))
		return `${at}.required: a list of property names`;
	if ("enum" in s && !Array.isArray(s.enum)) return `${at}.enum: a list of values`;
	for (const key of ["properties", "patternProperties", "$defs", "definitions"]) {
		if (!(key in s)) continue;
		const children = s[key];
		if (children === null || typeof children !== "object" || Array.isArray(children))
			return `${at}.${key}: an object of schemas`;
		for (const [name, child] of Object.entries(children)) {
			const problem = schemaProblem(child, `${at}.${key}.${name}`, depth + 1);
			if (problem) return problem;
		}
	}
	for (const key of ["items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else"]) {
		if (!(key in s)) continue;
		const problem = schemaProblem(s[key], `${at}.${key}`, depth + 1);
		if (problem) return problem;
	}
	for (const key of ["anyOf", "oneOf", "allOf", "prefixItems"]) {
		if (!(key in s)) continue;
		const list = s[key];
		if (!Array.isArray(list) || list.length === 0) return `${at}.${key}: a non-empty list of schemas`;
		for (const [i, child] of list.entries()) {
			const problem = schemaProblem(child, `${at}.${key}.${i}`, depth + 1);
			if (problem) return problem;
		}
	}
	return undefined;
}

/**
 * The bounds outputSchema has (run-output.ts), for the schema pi checks a tool's arguments with in the
 * session's own pi: compiling it and checking one place in the arguments are bounded the same way.
 * No `pattern` or `patternProperties`: pi runs them as JavaScript RegExps, whose backtracking takes
 * exponential time on patterns as short as `(a+)+$`, and the model (so whatever injected it) writes
 * the text they run on. A tool can say the format in its description, or check it when it answers.
 */
export const toolSchemaLimits: CostLimits = {
	patterns: "refuse",
	maxNesting: 64,
	maxPatternProgram: 0,
	maxPatternPrograms: 0,
	maxCompileUnits: 600,
	maxLocationCost: 50_000,
	maxDepth: 128,
};

/** Refused as for outputSchema (schema-cost.ts uniqueItemsRefusal), named as the field. */
function unique(schema: unknown): string | undefined {
	const refusal = uniqueItemsRefusal(schema);
	return refusal && `parameters: ${refusal}`;
}

/** Why the cost of checking arguments against `schema` is over a bound, or undefined. */
function costProblem(schema: unknown): string | undefined {
	try {
		schemaCost(schema, toolSchemaLimits);
		return undefined;
	} catch (error) {
		if (error instanceof SchemaRefusal) return `parameters: ${error.message}`;
		throw error;
	}
}

export const ClientTool = z
	.strictObject({
		name: z
			.string()
			.regex(/^[A-Za-z_][A-Za-z0-9_-]{0,63}$/, "a letter or _ first, then letters, digits, _ or -; at most 64")
			.refine((name) => !piToolNames.has(name), {
				error: `a name of one of pi's own tools (${[...piToolNames].join(", ")}) is not a client tool's`,
			})
			.openapi({ description: "The name the model calls the tool by", example: "lookup_price" }),
		description: z.string().min(1).max(4096).openapi({
			description: "What the tool does, shown to the model",
			example: "The price of a product in EUR, by its SKU",
		}),
		parameters: z
			.record(z.string(), z.unknown())
			.superRefine((schema, ctx) => {
				if (schema.type !== "object") {
					ctx.addIssue({ code: "custom", message: 'a JSON Schema of an object: `"type": "object"`' });
					return;
				}
				const problem = schemaProblem(schema, "parameters", 0) ?? unique(schema) ?? costProblem(schema);
				if (problem) ctx.addIssue({ code: "custom", message: problem });
			})
			.openapi({
				description:
					"A JSON Schema (`type: object`) of the tool's arguments; pi checks the model's arguments against it before the call reaches the program",
				example: { type: "object", properties: { sku: { type: "string" } }, required: ["sku"] },
			}),
	})
	.openapi("ClientTool", {
		description: "A tool the calling program runs: the model calls it, the program answers the call",
	});
export type ClientTool = z.infer<typeof ClientTool>;

export const ClientTools = z
	.array(ClientTool)
	.max(64)
	.superRefine((tools, ctx) => {
		const seen = new Set<string>();
		for (const [i, tool] of tools.entries()) {
			if (seen.has(tool.name))
				ctx.addIssue({ code: "custom", path: [i, "name"], message: `${tool.name} is declared twice` });
			seen.add(tool.name);
		}
		if (JSON.stringify(tools).length > maxClientToolsBytes)
			ctx.addIssue({ code: "custom", message: `the definitions take more than ${maxClientToolsBytes} bytes as JSON` });
	})
	.openapi({
		description:
			"Tools the calling program runs (at most 64): the model may call them, each call becomes a tool call resource (GET …/tool-calls) and a `tool_call_requested` event, and the program's answer (POST …/tool-calls/{callId}) is the tool's result. docs/client-tools.md",
		example: [
			{
				name: "lookup_price",
				description: "The price of a product in EUR, by its SKU",
				parameters: { type: "object", properties: { sku: { type: "string" } }, required: ["sku"] },
			},
		],
	});

/** What the extension puts in the dialog's prefill. */
export interface ClientToolRequest {
	toolCallId: string;
	name: string;
	arguments: unknown;
}

/** The call a client-tool dialog carries, or undefined when its prefill is not one. */
export function readClientToolRequest(prefill: string | undefined): ClientToolRequest | undefined {
	if (prefill === undefined) return undefined;
	let value: unknown;
	try {
		value = JSON.parse(prefill);
	} catch {
		return undefined;
	}
	if (value === null || typeof value !== "object") return undefined;
	const { toolCallId, name, arguments: args } = value as Record<string, unknown>;
	if (typeof toolCallId !== "string" || typeof name !== "string" || toolCallId.length === 0) return undefined;
	return { toolCallId, name, arguments: args ?? {} };
}
