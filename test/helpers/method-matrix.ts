/**
 * The method × principal matrix, read from the gateway's own OpenAPI document (the one it serves,
 * generated from its routes): every path, every method a client can send, every kind of caller,
 * and the outcome the document declares. Nothing here names a route, so an operation added
 * tomorrow is in the matrix tomorrow.
 */

/** Every method a client can send that the router might answer; the document declares some of them. */
export const methods = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"] as const;
export type Method = (typeof methods)[number];

/**
 * The callers: no credential; the owner's own key without the operation's scope; another
 * principal holding every non-admin scope; the owner (every non-admin scope); the admin token.
 */
export const callers = ["none", "wrongScope", "otherOwner", "owner", "admin"] as const;
export type Caller = (typeof callers)[number];

type Operation = {
	operationId?: string;
	"x-pi-command"?: string;
	security?: { bearer?: string[] }[];
	parameters?: { name: string; in: string }[];
	responses?: Record<string, unknown>;
};
export type Document = { paths: Record<string, Record<string, Operation>> };

export interface Row {
	template: string;
	method: Method;
	/** The operation that method runs: GET's for HEAD; none for OPTIONS or an undeclared method. */
	operation?: Operation;
	/** The scope the operation declares; null for a public one, "any" for any credential. */
	scope?: string | null;
	/** Methods the document declares on this path, as `Allow` should list them. */
	allow: string[];
}

/** The rows of the matrix: every path of `document` × every method in `methods`. */
export function rows(document: Document): Row[] {
	const out: Row[] = [];
	for (const [template, item] of Object.entries(document.paths)) {
		const declared = Object.keys(item).map((m) => m.toUpperCase());
		const allow = [...declared, ...(declared.includes("GET") ? ["HEAD"] : []), "OPTIONS"].sort();
		for (const method of methods) {
			const operation = item[(method === "HEAD" ? "GET" : method).toLowerCase()];
			// `security: []` is public (null); `[{bearer: []}]` needs a credential but no scope ("any").
			const scope = operation
				? operation.security?.length === 0
					? null
					: (operation.security?.[0]?.bearer?.[0] ?? "any")
				: undefined;
			out.push({ template, method, operation, scope, allow });
		}
	}
	return out;
}

/** Whether the path names a session: ownership applies (another principal's session is a 404). */
export const sessionScoped = (template: string) => template.startsWith("/v1/sessions/{id}");

/**
 * Whether the operation runs in an MCP session (it takes `Mcp-Session-Id`): the matrix sends the
 * owner's, and to anyone else it is not found, as a session of another principal is.
 */
export const mcpScoped = (operation: Operation | undefined) =>
	!!operation?.parameters?.some((p) => p.in === "header" && p.name.toLowerCase() === "mcp-session-id");

/** What the document says `caller` gets: an exact status, or "declared" (any status the operation declares). */
export type Outcome =
	| { status: number; code?: string; allow?: true }
	| { declared: true; notCode?: string; notStatus: number[] };

export function expected(row: Row, caller: Caller): Outcome {
	const isPublic = row.operation ? row.scope === null : false;
	if (caller === "none" && !isPublic && !(row.operation === undefined && isPublicPath(row))) {
		return { status: 401, code: "unauthorized" };
	}
	// No operation runs: OPTIONS says which methods the path has, any other method is refused.
	if (!row.operation) return row.method === "OPTIONS" ? { status: 204, allow: true } : { status: 405, allow: true };
	if (isPublic) return { declared: true, notStatus: [401, 403, 500] };
	// An MCP session is its opener's: to another principal (the admin token too) it is not found.
	if ((caller === "otherOwner" || caller === "admin") && mcpScoped(row.operation))
		return { status: 404, code: "mcp_session_not_found" };
	// Any credential will do: a key with some other scope gets what the owner gets.
	if (row.scope === "any")
		return {
			declared: true,
			notStatus: [401, 403, 500],
			...(mcpScoped(row.operation) && { notCode: "mcp_session_not_found" }),
		};
	if (caller === "wrongScope") return { status: 403, code: "insufficient_scope" };
	if (row.scope === "admin" && caller !== "admin") return { status: 403, code: "insufficient_scope" };
	if (caller === "otherOwner" && sessionScoped(row.template)) return { status: 404, code: "session_not_found" };
	return { declared: true, notStatus: [401, 403, 500], notCode: "session_not_found" };
}

/** A path whose every declared operation is public: nothing to authenticate for OPTIONS or 405 either. */
let publicPaths = new Set<string>();
export function learnPublicPaths(document: Document): void {
	publicPaths = new Set(
		Object.entries(document.paths)
			.filter(([, item]) => Object.values(item).every((op) => op.security?.length === 0))
			.map(([template]) => template),
	);
}
const isPublicPath = (row: Row) => publicPaths.has(row.template);

/** A scope the operation does not need (and that does not imply it): what the owner's narrow key holds. */
export const wrongScopeFor = (scope: string) => (scope === "sessions:read" ? "approvals:answer" : "sessions:read");

/** Statuses the operation declares (a `4XX`-style range too). */
export function declares(operation: Operation, status: number): boolean {
	const responses = operation.responses ?? {};
	return [String(status), `${String(status)[0]}XX`, "default"].some((k) => k in responses);
}

/**
 * The media type of a path's errors, as its operations declare them: problem+json, or plain JSON
 * where the path speaks another protocol's error shape (OpenAI's `{error: {…}}`). Every method of
 * the path answers its errors so (a 401 before any operation runs, a 405, an OPTIONS refused).
 */
export function errorMediaType(document: Document, template: string): string {
	for (const operation of Object.values(document.paths[template] ?? {}))
		for (const [status, response] of Object.entries(operation.responses ?? {}))
			if (/^[45]/.test(status) && "application/json" in ((response as { content?: object }).content ?? {}))
				return "application/json";
	return "application/problem+json";
}

/** The stable code of an error body: problem+json's `code`, or OpenAI's `error.code`. */
export function errorCode(body: unknown): string | undefined {
	const value = body as { code?: string; error?: { code?: string } } | undefined;
	return value?.code ?? value?.error?.code;
}
