import { chmodSync, mkdirSync, rmSync } from "node:fs";
import {
	createServer,
	Agent as HttpAgent,
	request as httpRequest,
	type IncomingMessage,
	type OutgoingHttpHeaders,
	type Server,
	type ServerResponse,
} from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { dirname } from "node:path";
import type { RelayPlan, RelayRoute } from "./credentials.ts";
import { allowed, dropped, outgoing, plainPath, Refused } from "./gate.ts";
import { type CallUsage, totalTokens, UsageTap } from "./usage.ts";

/**
 * The relay: one HTTP server per sandboxed pi, on a unix socket only that sandbox is given. A call
 * to `/<route>/<path>` goes to the route's real base URL + `<path>`, with each placeholder of that
 * route (in a header or the query) swapped for the key it stands for. The answer is piped back as
 * it comes (a stream is never held), and a copy of each chunk feeds the usage tap: the session's
 * budget counts every call from the provider's own figures, and a call made once it is spent is
 * refused here (403, in the error shapes OpenAI's and Anthropic's SDKs read), which pi shows as a
 * failed turn.
 */
export interface RelaySink {
	/** Why a call is refused now (the budget is spent), or undefined. */
	refusal(): string | undefined;
	/** One call's usage, as the provider reported it, and its cost at the model's prices. */
	counted(tokens: number, costUsd: number): void;
}

const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };

function problem(res: ServerResponse, status: number, code: string, message: string): void {
	if (res.headersSent) {
		res.destroy();
		return;
	}
	// Both SDKs' shapes at once: OpenAI reads error.message, Anthropic type:"error" and error.message.
	const body = JSON.stringify({ type: "error", error: { type: code, code, message } });
	res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
	res.end(body);
}

function costOf(route: RelayRoute, usage: CallUsage, requested: string | undefined): number {
	const cost = route.costs.get(usage.model ?? "") ?? route.costs.get(requested ?? "");
	if (!cost) return 0;
	return (
		(usage.input * cost.input +
			usage.output * cost.output +
			usage.cacheRead * cost.cacheRead +
			usage.cacheWrite * cost.cacheWrite) /
		1_000_000
	);
}

async function forward(req: IncomingMessage, res: ServerResponse, plan: RelayPlan, sink: RelaySink): Promise<void> {
	const match = /^\/([^/?]+)([^?]*)(\?.*)?$/.exec(req.url ?? "");
	const route = match ? plan.routes.get(decodeURIComponent(match[1] as string)) : undefined;
	if (!match || !route)
		return problem(res, 404, "relay_route_unknown", "No provider of the gateway's relay at this path");
	const refusal = sink.refusal();
	if (refusal) {
		req.resume();
		return problem(res, 403, "budget_exhausted", refusal);
	}
	const path = match[2] ?? "";
	let target: URL;
	let headers: OutgoingHttpHeaders;
	try {
		const bad = plainPath(path);
		if (bad) throw new Refused(400, "relay_path_refused", `The relay refuses a path with ${bad}`);
		if (!allowed(route, req.method ?? "", path))
			throw new Refused(403, "relay_call_refused", `The relay carries model calls only, not ${req.method} ${path}`);
		const out = await outgoing(route, path, match[3] ?? "", req.headers);
		target = new URL(route.upstream.replace(/\/+$/, "") + path + out.query);
		headers = out.headers;
	} catch (error) {
		req.resume();
		const refused =
			error instanceof Refused ? error : new Refused(502, "relay_key_unavailable", (error as Error).message);
		return problem(res, refused.status, refused.code, refused.message);
	}
	// Plain bytes back, so the tap reads the usage (the hop to pi is local: nothing to save).
	headers["accept-encoding"] = "identity";
	const secure = target.protocol === "https:";
	const upstream = (secure ? httpsRequest : httpRequest)(target, {
		method: req.method,
		headers,
		agent: secure ? agents.https : agents.http,
	});
	// Nagle off: a request's last small write (a chunked body's end) is not held for the previous one's ACK.
	upstream.setNoDelay(true);
	// The model asked for (the answer's own name may carry a date the price list lacks).
	let head = "";
	req.on("data", (chunk: Buffer) => {
		if (head.length < 64 * 1024) head += chunk.toString("utf8", 0, Math.min(chunk.length, 64 * 1024));
	});
	const requestedModel = () => /"model"\s*:\s*"([^"]{1,200})"/.exec(head)?.[1];
	upstream.on("response", (answer) => {
		const out: OutgoingHttpHeaders = {};
		for (const [name, value] of Object.entries(answer.headers))
			if (!dropped.has(name) && value !== undefined) out[name] = value;
		res.writeHead(answer.statusCode ?? 502, out);
		res.flushHeaders();
		const tap = new UsageTap(answer.headers["content-type"]);
		answer.on("data", (chunk: Buffer) => tap.push(chunk));
		answer.on("end", () => {
			const usage = tap.end();
			const tokens = totalTokens(usage);
			if (tokens > 0) sink.counted(tokens, costOf(route, usage, requestedModel()));
		});
		answer.on("error", () => res.destroy());
		answer.pipe(res);
	});
	upstream.on("error", (error) =>
		problem(res, 502, "relay_upstream_failed", `The provider could not be reached: ${error.message}`),
	);
	res.on("close", () => {
		if (!res.writableFinished) upstream.destroy();
	});
	req.pipe(upstream);
}

const servers = new Map<string, Server>();

/**
 * One session's relay holds at most `connections` open (past them a connection is closed at once),
 * and a request's headers come within `headersMs`: an agent that held ~22,000 half-sent requests
 * open ran the gateway out of file descriptors, and other principals' creates failed (EMFILE).
 */
export const relayLimits = { connections: 16, headersMs: 10_000 };

/** Listens on `socket` for one pi (a server already there is replaced): the plan's routes, the sink's budget. */
export function openRelay(socket: string, plan: RelayPlan, sink: RelaySink): void {
	closeRelay(socket);
	mkdirSync(dirname(socket), { recursive: true, mode: 0o700 });
	rmSync(socket, { force: true });
	const server = createServer(
		{ headersTimeout: relayLimits.headersMs, connectionsCheckingInterval: 1_000 },
		(req, res) => {
			req.socket.setNoDelay(true);
			forward(req, res, plan, sink).catch((error) => problem(res, 502, "relay_failed", (error as Error).message));
		},
	);
	server.maxConnections = relayLimits.connections;
	server.keepAliveTimeout = 60_000;
	server.on("error", () => {});
	server.listen(socket);
	servers.set(socket, server);
	try {
		chmodSync(socket, 0o600);
	} catch {}
}

export function closeRelay(socket: string): void {
	const server = servers.get(socket);
	if (!server) return;
	servers.delete(socket);
	server.close();
	server.closeAllConnections();
	rmSync(socket, { force: true });
}
