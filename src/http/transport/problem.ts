import { STATUS_CODES } from "node:http";
import { z } from "@hono/zod-openapi";
import { GatewayError } from "../../shared/errors.ts";

/** RFC 9457 problem details; `code` is a stable machine-readable name, `type` its URI form. */
export const Problem = z
	.object({
		type: z.string().openapi({
			description: "A URN naming the problem (RFC 9457)",
			example: "urn:pi-gateway:problem:session_not_found",
		}),
		title: z.string().openapi({ description: "The HTTP status's reason phrase", example: "Not Found" }),
		status: z.number().int().openapi({ description: "The HTTP status, as answered", example: 404 }),
		code: z
			.string()
			.openapi({ description: "What went wrong, as a stable code to branch on", example: "session_not_found" }),
		detail: z.string().openapi({ description: "What went wrong, in words", example: "No session ses_4f2a9c" }),
		instance: z.string().optional().openapi({ description: "The request id (X-Request-Id)" }),
		issues: z
			.array(
				z.object({
					path: z.string().describe("Where in the input, dotted (`(body)` for the body itself)"),
					message: z.string().describe("What is wrong there"),
				}),
			)
			.optional()
			.openapi({ description: "What was wrong with the input (400 only)" }),
		stderr: z.string().optional().openapi({ description: "The tail of pi's stderr (502 only)" }),
		models: z
			.array(z.string())
			.optional()
			.openapi({ description: "`unknown_model` (422) only: the models pi offers, as `provider/id`" }),
	})
	.openapi("Problem", {
		description: "An error (RFC 9457 problem+json): nothing of a refused request reached pi",
		example: {
			type: "urn:pi-gateway:problem:session_not_found",
			title: "Not Found",
			status: 404,
			code: "session_not_found",
			detail: "No session ses_4f2a9c",
			instance: "6f9619ff-8b86-4d11-b42d-00c04fc964ff",
		},
	});
export type Problem = z.infer<typeof Problem>;

const titles: Record<number, string> = {
	400: "Bad Request",
	401: "Unauthorized",
	403: "Forbidden",
	404: "Not Found",
	405: "Method Not Allowed",
	406: "Not Acceptable",
	409: "Conflict",
	410: "Gone",
	412: "Precondition Failed",
	413: "Content Too Large",
	415: "Unsupported Media Type",
	416: "Range Not Satisfiable",
	421: "Misdirected Request",
	422: "Unprocessable Content",
	429: "Too Many Requests",
	500: "Internal Server Error",
	501: "Not Implemented",
	502: "Bad Gateway",
	503: "Service Unavailable",
	504: "Gateway Timeout",
	507: "Insufficient Storage",
};

/** An error raised by the HTTP layer itself (bad input, auth, routing); its extras are problem members. */
export class ApiError extends GatewayError {
	declare readonly extra: Partial<Problem>;

	constructor(status: number, code: string, detail: string, extra: Partial<Problem> = {}) {
		super(status, code, detail, extra);
	}
}

/** Any GatewayError (the domain's or HTTP's own) as RFC 9457 problem details. */
export function toProblem(error: GatewayError, instance?: string): Problem {
	return {
		type: `urn:pi-gateway:problem:${error.code}`,
		title: titles[error.status] ?? STATUS_CODES[error.status] ?? "Error",
		status: error.status,
		code: error.code,
		detail: error.message,
		...(instance ? { instance } : {}),
		...error.extra,
	};
}
