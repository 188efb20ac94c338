import { createHash } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../transport/openapi.ts";
import { ApiError } from "../transport/problem.ts";
import { routePattern } from "../transport/route-pattern.ts";
import type { IdempotencyKeys, KeyRecord, StoredAnswer } from "./key-store.ts";

/**
 * The POSTs that start work and take an `Idempotency-Key` (IETF httpapi draft). The `…/stream`
 * variants and `Accept: text/event-stream` do not: a stream cannot be replayed, so a key there is
 * refused (400) rather than silently ignored.
 */
export const idempotentOperations = new Set([
	"sessions.create",
	"sessions.prompt",
	"sessions.steer",
	"sessions.followUp",
	"sessions.bash",
	"sessions.compact",
	"sessions.fork",
	"sessions.forkSession",
	"approvals.answer",
]);

export const replayedHeader = "Idempotent-Replayed";
/** Answers larger than this are not kept: a retry of such a request is told so (409). */
const maxKeptBytes = 1024 * 1024;
/** Answers that mean nothing started (limits, shutdown): not kept, so a retry can run. */
const notKept = new Set([429, 503]);
const keptHeaders = ["content-type", "location", "preference-applied"];
const validKey = /^[\x21-\x7e]{1,255}$/;

type Operation = {
	operationId?: string;
	parameters?: unknown[];
	responses?: Record<string, { description?: string; content?: unknown; headers?: Record<string, unknown> }>;
};
type Document = { paths?: Record<string, Record<string, Operation>>; components?: Record<string, unknown> };

const problem = (description: string) => ({
	description,
	content: { "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } } },
});

/** Adds the header parameter (and what it can answer) to the idempotent operations of the spec. */
export function declareIdempotency(document: Document): void {
	// Inline in each operation, not a $ref: tools that read parameters one by one see it whole.
	const parameter = {
		name: "Idempotency-Key",
		in: "header",
		required: false,
		description: `Makes a retry safe (IETF httpapi Idempotency-Key draft): the same key with the same request within the window (24 h by default) gets the first answer again, status and body, with \`${replayedHeader}: true\`, and nothing reaches pi twice. The same key with another request → 422; while the first request still runs → 409; a key the gateway cannot store (its disk is full) → 507, and nothing runs. Keys are the caller's own: another principal's request with the same key is a request of its own. Kept in fair shares: each principal keeps up to its share (--max-idempotency-keys-per-principal, by default a tenth of --max-idempotency-keys), past which its own oldest finished keys go first; past the cap the principal that holds the most gives up its oldest, so another principal's flood of keys never evicts yours. 1-255 visible ASCII characters, e.g. a UUID.`,
		schema: { type: "string", minLength: 1, maxLength: 255 },
	};
	for (const operations of Object.values(document.paths ?? {}))
		for (const operation of Object.values(operations)) {
			if (!idempotentOperations.has(operation.operationId ?? "")) continue;
			operation.parameters = [...(operation.parameters ?? []), parameter];
			operation.responses ??= {};
			const responses = operation.responses;
			responses[409] ??= problem("Conflict, or a request with this Idempotency-Key is still running");
			responses[422] ??= problem("This Idempotency-Key was used with a different request");
			responses[507] ??= problem(
				"The gateway's data disk is full: the Idempotency-Key could not be stored, so the request did not run",
			);
			for (const [status, response] of Object.entries(responses))
				if (status.startsWith("2"))
					response.headers = {
						...response.headers,
						[replayedHeader]: {
							description: "`true` when this is the stored answer to an earlier request with the same Idempotency-Key",
							schema: { type: "string", enum: ["true"] },
						},
					};
		}
}

/** Which request paths the idempotent operations have, read from the document once routes exist. */
export class IdempotentRoutes {
	#routes: RegExp[] = [];

	load(document: Document): void {
		this.#routes = [];
		for (const [template, operations] of Object.entries(document.paths ?? {})) {
			const post = operations.post;
			if (!post || !idempotentOperations.has(post.operationId ?? "")) continue;
			this.#routes.push(routePattern(template));
		}
	}

	matches(path: string): boolean {
		return this.#routes.some((r) => r.test(path));
	}
}

/**
 * Replays the first answer to a repeated Idempotency-Key, to the principal that sent it only (a key
 * is scoped by the caller: bob reusing alice's key runs his own request). Keys are claimed in the store before the
 * handler runs (one atomic insert, so two concurrent retries cannot both pass, on one node or, in
 * cluster mode, on several) and hold the answer after.
 */
export function idempotency(routes: IdempotentRoutes, store: IdempotencyKeys | undefined): MiddlewareHandler<AppEnv> {
	return async function idempotencyKey(c, next) {
		const key = c.req.header("idempotency-key");
		if (key === undefined || c.req.method !== "POST") return next();
		if (!routes.matches(c.req.path)) {
			if (/\/stream$/.test(c.req.path))
				throw new ApiError(
					400,
					"idempotency_not_streamable",
					"A stream cannot be replayed: send Idempotency-Key on the JSON operation (without /stream)",
				);
			return next();
		}
		// A resume (Last-Event-ID) answers with a stream too, and sends nothing to pi.
		if ((c.req.header("accept") ?? "").includes("text/event-stream") || c.req.header("last-event-id") !== undefined)
			throw new ApiError(
				400,
				"idempotency_not_streamable",
				"A stream cannot be replayed: use Idempotency-Key with a JSON answer (Accept: application/json or Prefer: wait)",
			);
		if (!validKey.test(key))
			throw new ApiError(400, "invalid_idempotency_key", "Idempotency-Key must be 1-255 visible ASCII characters");
		if (!store?.open) return next();
		const body = await c.req.text();
		const fingerprint = createHash("sha256").update(`${c.req.method} ${c.req.path}\n${body}`).digest("hex");
		// The caller's own key: another principal's request under the same key is none of theirs.
		const scoped = { principal: c.get("principal")?.name ?? "", key };
		const seen = await store.get(scoped);
		if (seen) return answerSeen(seen, fingerprint);
		if (!(await store.claim(scoped, fingerprint))) {
			// Taken between the two steps (another node, in cluster mode): it may have finished already.
			const now = await store.get(scoped);
			if (now) return answerSeen(now, fingerprint);
			throw inUse();
		}
		try {
			await next();
		} catch (error) {
			await store.forget(scoped);
			throw error;
		}
		if (!store.open) return;
		if (notKept.has(c.res.status)) {
			await store.forget(scoped);
			return;
		}
		const text = await c.res.clone().text();
		const headers: Record<string, string> = {};
		for (const name of keptHeaders) {
			const value = c.res.headers.get(name);
			if (value !== null) headers[name] = value;
		}
		await store.finish(scoped, {
			status: c.res.status,
			headers,
			body: Buffer.byteLength(text) > maxKeptBytes ? null : text,
		});
	};
}

function inUse(): ApiError {
	return new ApiError(
		409,
		"idempotency_key_in_use",
		"A request with this Idempotency-Key is still running; retry after it ends",
	);
}

function answerSeen(seen: KeyRecord, fingerprint: string): Response {
	if (seen.fingerprint !== fingerprint)
		throw new ApiError(
			422,
			"idempotency_key_reused",
			"This Idempotency-Key was used with a different request (method, path or body)",
		);
	if (seen.state === "running") throw inUse();
	return replay(seen.answer);
}

function replay(answer: StoredAnswer): Response {
	if (answer.body === null)
		throw new ApiError(
			409,
			"idempotency_answer_not_kept",
			"The first answer to this Idempotency-Key was too large to keep; read the resource instead",
		);
	return new Response(answer.status === 204 ? null : answer.body, {
		status: answer.status,
		headers: { ...answer.headers, [replayedHeader]: "true" },
	});
}
