import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import type { Destination } from "./destinations.ts";

export interface SendResult {
	status: number | null;
	error: string | null;
}

/** Bytes of a receiver's answer read at most (it is only drained, never kept). */
const maxResponseBytes = 64 * 1024;

/**
 * One POST to a checked destination: the connection goes to the resolved address (no second DNS
 * lookup), and the whole exchange — connect, send, answer — is bounded by `timeoutMs`.
 */
export function send(
	url: URL,
	destination: Destination,
	headers: Record<string, string>,
	body: string,
	timeoutMs: number,
): Promise<SendResult> {
	return new Promise((resolve) => {
		const request = url.protocol === "https:" ? httpsRequest : httpRequest;
		let settled = false;
		const done = (result: SendResult) => {
			if (settled) return;
			settled = true;
			clearTimeout(timer);
			req.destroy();
			resolve(result);
		};
		const req = request(url, {
			method: "POST",
			headers: { ...headers, "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) },
			agent: false,
			// Answered on a later turn, as a real lookup is: answered at once, a connect that fails at
			// once (ENETUNREACH: no route to the address) was emitted before the request had its error
			// listener, and the unhandled error killed the gateway, again at each restart (an attacker's review).
			lookup: (_host, options, callback) =>
				setImmediate(() => {
					const all = (options as { all?: boolean }).all;
					if (all) (callback as (e: null, a: Destination[]) => void)(null, [destination]);
					else callback(null, destination.address, destination.family);
				}),
		});
		const timer = setTimeout(() => done({ status: null, error: `no answer within ${timeoutMs} ms` }), timeoutMs);
		req.on("error", (error) => done({ status: null, error: error.message }));
		req.on("response", (res) => {
			let read = 0;
			res.on("data", (chunk: Buffer) => {
				read += chunk.length;
				if (read > maxResponseBytes) done({ status: res.statusCode ?? null, error: null });
			});
			res.on("end", () => done({ status: res.statusCode ?? null, error: null }));
			res.on("error", () => done({ status: res.statusCode ?? null, error: null }));
		});
		req.end(body);
	});
}
