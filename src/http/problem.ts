import { z } from "@hono/zod-openapi";

/** RFC 9457 problem details; `code` is a stable machine-readable name, `type` its URI form. */
export const Problem = z
	.object({
		type: z.string().openapi({ example: "urn:pi-gateway:problem:session_not_found" }),
		title: z.string().openapi({ example: "Not Found" }),
		status: z.number().int().openapi({ example: 404 }),
		code: z.string().openapi({ example: "session_not_found" }),
		detail: z.string().openapi({ example: "No session ses_4f2a9c" }),
		instance: z.string().optional().openapi({ description: "The request id (X-Request-Id)" }),
		issues: z
			.array(z.object({ path: z.string(), message: z.string() }))
			.optional()
			.openapi({ description: "What was wrong with the input (400 only)" }),
		stderr: z.string().optional().openapi({ description: "The tail of pi's stderr (502 only)" }),
	})
	.openapi("Problem");
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
	413: "Content Too Large",
	415: "Unsupported Media Type",
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

export class ApiError extends Error {
	readonly status: number;
	readonly code: string;
	readonly extra: Partial<Problem>;

	constructor(status: number, code: string, detail: string, extra: Partial<Problem> = {}) {
		super(detail);
		this.status = status;
		this.code = code;
		this.extra = extra;
	}

	toProblem(instance?: string): Problem {
		return {
			type: `urn:pi-gateway:problem:${this.code}`,
			title: titles[this.status] ?? "Error",
			status: this.status,
			code: this.code,
			detail: this.message,
			...(instance ? { instance } : {}),
			...this.extra,
		};
	}
}
