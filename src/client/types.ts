/**
 * Types read off `paths` (schema.ts, generated from openapi.yaml by openapi-typescript): which
 * paths answer a method, what each takes (path, query and header parameters, JSON body) and what
 * its 2xx JSON answer is. `request()` is typed by these, so every operation of the spec is
 * reachable and checked without one hand-written signature per operation.
 */
import type { components, paths } from "./schema.ts";

export type Schemas = components["schemas"];
export type StreamEvent = Schemas["StreamEvent"];
export type EventType = StreamEvent["type"];
/** The event of one type, narrowed from the union. */
export type EventOf<T extends EventType> = Extract<StreamEvent, { type: T }>;

export type Method = "GET" | "PUT" | "POST" | "DELETE" | "PATCH" | "HEAD";
type Lower<M extends Method> = Lowercase<M>;

/** The operation object of `P` for `M`, or never when the path does not answer it. */
export type Operation<P extends keyof paths, M extends Method> =
	Lower<M> extends keyof paths[P] ? NonNullable<paths[P][Lower<M>]> : never;

/** Paths that answer method `M`. */
export type PathsOf<M extends Method> = {
	[P in keyof paths]: [Operation<P, M>] extends [never] ? never : P;
}[keyof paths];

type Params<O> = O extends { parameters: infer X } ? X : Record<string, never>;
type Part<O, K extends string> = K extends keyof Params<O> ? NonNullable<Params<O>[K]> : never;
type JsonBody<O> = O extends { requestBody?: infer B }
	? NonNullable<B> extends { content: { "application/json": infer J } }
		? J
		: undefined
	: undefined;
type Required<O> = O extends { requestBody: { content: unknown } } ? true : false;

/** What a call of `P` with `M` may carry; parts the operation requires are required here too. */
export type RequestOptions<P extends keyof paths, M extends Method> = {
	query?: [Part<Operation<P, M>, "query">] extends [never] ? never : Part<Operation<P, M>, "query">;
	headers?: Record<string, string>;
	signal?: AbortSignal;
} & ([Part<Operation<P, M>, "path">] extends [never] ? { path?: never } : { path: Part<Operation<P, M>, "path"> }) &
	(JsonBody<Operation<P, M>> extends undefined
		? { body?: never }
		: Required<Operation<P, M>> extends true
			? { body: JsonBody<Operation<P, M>> }
			: { body?: JsonBody<Operation<P, M>> });

type Success = 200 | 201 | 202 | 204 | 206;
type Responses<O> = O extends { responses: infer R } ? R : never;
type JsonOf<R> = R extends { content: { "application/json": infer J } }
	? J
	: R extends { content?: never }
		? undefined
		: unknown;

/** The JSON of any 2xx answer of `P` with `M` (a union when there are several, e.g. RunResult | RunAccepted). */
export type ResponseData<P extends keyof paths, M extends Method> = {
	[S in Success & keyof Responses<Operation<P, M>>]: JsonOf<Responses<Operation<P, M>>[S]>;
}[Success & keyof Responses<Operation<P, M>>];

/** Whether every option of a call is optional (so the options argument may be left out). */
export type OptionalArgs<T> = object extends T ? [options?: T] : [options: T];
