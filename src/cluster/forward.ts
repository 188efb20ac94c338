import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { Readable } from "node:stream";
import { hopByHopHeaders } from "../net/hop-headers.ts";

/** Hop-by-hop headers, and the two this side writes anew (the node's host, the body's length). */
const hopByHop = new Set([...hopByHopHeaders, "host", "content-length"]);

// Kept-alive connections between nodes; no timeouts of their own: SSE and wait-mode answers are long.
const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };

export interface Unreachable {
	unreachable: string;
	/** The node refused the connection: the request never reached it, so it is safe to send elsewhere. */
	refused: boolean;
}

/** Errors that mean no byte of the request reached the node. */
const refusals = new Set(["ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN"]);

/**
 * Sends `request` (its method, path, query and headers; `body` read already) to the node at
 * `base` and hands back its answer as it streams: SSE frames pass through as the owner writes
 * them, and the owner's connection closes when the client's does. Resolves `Unreachable` when the
 * node did not answer at all (nothing reached it, so trying elsewhere is safe); an answer that
 * breaks off midway ends the client's stream the same way (EventSource reconnects).
 */
export function forward(
	base: string,
	request: Request,
	/** Read already, or (a raw upload) streamed through as it arrives: then it cannot be sent twice. */
	body: Uint8Array | ReadableStream<Uint8Array> | undefined,
	extraHeaders: Record<string, string>,
	/** Aborting it cuts the exchange (before or during the answer); `closed` runs when it is over either way. */
	control: { signal: AbortSignal; closed(): void },
): Promise<Response | Unreachable> {
	const incoming = new URL(request.url);
	const target = new URL(incoming.pathname + incoming.search, base);
	const headers: Record<string, string> = {};
	request.headers.forEach((value, name) => {
		if (!hopByHop.has(name)) headers[name] = value;
	});
	Object.assign(headers, extraHeaders);
	if (body instanceof Uint8Array) headers["content-length"] = String(body.byteLength);
	else if (body && request.headers.has("content-length"))
		headers["content-length"] = request.headers.get("content-length") as string;
	const https = target.protocol === "https:";
	return new Promise((resolve) => {
		const out = (https ? httpsRequest : httpRequest)(
			target,
			{ method: request.method, headers, agent: https ? agents.https : agents.http },
			(res) => {
				res.on("close", control.closed);
				resolve(answer(res));
			},
		);
		out.on("error", (error: NodeJS.ErrnoException) => {
			control.closed();
			resolve({ unreachable: error.message, refused: refusals.has(error.code ?? "") });
		});
		const abort = (why: string) => () => out.destroy(new Error(why));
		const signals: [AbortSignal, string][] = [
			[request.signal, "the client went away"],
			[control.signal, "the node that runs the session is gone"],
		];
		for (const [signal, why] of signals) {
			if (signal.aborted) abort(why)();
			else signal.addEventListener("abort", abort(why), { once: true });
		}
		if (body instanceof ReadableStream)
			Readable.fromWeb(body as never)
				.on("error", (error) => out.destroy(error))
				.pipe(out);
		else out.end(body);
	});
}

function answer(res: IncomingMessage): Response {
	const headers = new Headers();
	for (const [name, value] of Object.entries(res.headers)) {
		if (value === undefined || hopByHop.has(name)) continue;
		for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
	}
	const status = res.statusCode ?? 502;
	const empty = status === 204 || status === 304 || status < 200;
	if (empty) res.resume();
	return new Response(empty ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>), { status, headers });
}
