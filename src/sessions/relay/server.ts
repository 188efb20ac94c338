import { chmodSync, mkdirSync, rmSync } from "node:fs";
import {
	createServer,
	type IncomingMessage,
	type OutgoingHttpHeaders,
	type Server,
	type ServerResponse,
} from "node:http";
import { dirname } from "node:path";
import type { RelayPlan } from "./credentials.ts";
import { allowed, dropped, outgoing, plainPath, Refused } from "./gate.ts";
import { type AnswerHead, listOf } from "./http1.ts";
import { CallMeter, type RelaySink } from "./metering.ts";
import { type ModelRequest, readModelRequest } from "./request-body.ts";
import { UpstreamCall } from "./upstream.ts";

/**
 * The relay: one HTTP server per sandboxed pi, on a unix socket only that sandbox is given. A call
 * to `/<route>/<path>` goes to the route's real base URL + `<path>`, with each placeholder of that
 * route (in a header or the query) swapped for the key it stands for. The request is read whole
 * first (request-body.ts: the model it asks for, no background call, a stream's usage asked for);
 * the answer is passed back as it comes, a read of it at a time (upstream.ts: a stream is never
 * held), and a copy of each read feeds the call's meter: the session's budget counts every call
 * once, from the provider's own figures (else an estimate), and a call made once it is spent is
 * refused here (403, in the error shapes OpenAI's and Anthropic's SDKs read), which pi shows as a
 * failed turn. At most `relayLimits.calls` are in flight at once.
 */

function problem(
	res: ServerResponse,
	status: number,
	code: string,
	message: string,
	headers: OutgoingHttpHeaders = {},
): void {
	if (res.headersSent) {
		res.destroy();
		return;
	}
	// Both SDKs' shapes at once: OpenAI reads error.message, Anthropic type:"error" and error.message.
	const body = JSON.stringify({ type: "error", error: { type: code, code, message } });
	res.writeHead(status, { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(body) });
	res.end(body);
}

/** A call refused before anything is sent (a body past its cap: the connection is closed, not read on). */
function refuse(req: IncomingMessage, res: ServerResponse, error: unknown): void {
	req.resume();
	const refused =
		error instanceof Refused ? error : new Refused(502, "relay_key_unavailable", (error as Error).message);
	problem(res, refused.status, refused.code, refused.message, refused.status === 413 ? { connection: "close" } : {});
}

/** One session's relay: its routes, its budget, the calls it has in flight. */
interface Relay {
	plan: RelayPlan;
	sink: RelaySink;
	inFlight: number;
}

async function forward(req: IncomingMessage, res: ServerResponse, relay: Relay): Promise<void> {
	const { plan, sink } = relay;
	const match = /^\/([^/?]+)([^?]*)(\?.*)?$/.exec(req.url ?? "");
	const route = match ? plan.routes.get(decodeURIComponent(match[1] as string)) : undefined;
	if (!match || !route)
		return problem(res, 404, "relay_route_unknown", "No provider of the gateway's relay at this path");
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
		return refuse(req, res, error);
	}
	// A slot for the call, taken before its body is read (so a session holds at most `calls` bodies)
	// and before the budget's check, with no wait between that check and the call's start: parallel
	// calls are checked against the budget only as each starts, so the slots bound how far past it they go.
	if (relay.inFlight >= relayLimits.calls) {
		req.resume();
		const message = `A session's relay carries at most ${relayLimits.calls} model calls at once; retry once one has ended`;
		return problem(res, 429, "relay_calls_limit", message, { "retry-after": "1" });
	}
	relay.inFlight++;
	let body: ModelRequest;
	try {
		// The request is read whole before it is sent (what it asks for is known first); the answer never is.
		body = await readModelRequest(req, route, path);
		const refusal = sink.refusal({ priced: route.costs.size > 0 });
		if (refusal) throw new Refused(403, refusal.code, refusal.message);
	} catch (error) {
		relay.inFlight--;
		return refuse(req, res, error);
	}
	if (body.bytes.length > 0 || headers["content-length"] !== undefined) headers["content-length"] = body.bytes.length;
	let drain: NodeJS.Timeout | undefined;
	const meter = new CallMeter(route, sink, () => {
		relay.inFlight--;
		clearTimeout(drain);
	});
	// Plain bytes back, so the tap reads the usage (the hop to pi is local: nothing to save).
	headers["accept-encoding"] = "identity";
	meter.request(body.bytes.length, body.model);
	let answer: AnswerHead | undefined;
	/** The answer goes on to the caller (not once the caller left). */
	let piped = true;
	let left = false;
	let wrote = false;
	const streamed = () => listOf(answer?.headers["content-type"]).some((v) => /text\/event-stream/i.test(v));
	const upstream = new UpstreamCall(target, req.method ?? "GET", headers, body.bytes, {
		sent: () => meter.sent(),
		head(head) {
			answer = head;
			const type = head.headers["content-type"];
			meter.answer(head.status, Array.isArray(type) ? type[0] : type);
			if (left) return abandon();
			const out: OutgoingHttpHeaders = {};
			for (const [name, value] of Object.entries(head.headers)) if (!dropped.has(name)) out[name] = value;
			res.writeHead(head.status, out);
			// The head leaves with the body's first bytes when they came in the same read, else alone.
			process.nextTick(() => {
				if (!wrote && !res.writableEnded) res.flushHeaders();
			});
		},
		// One read of the answer at a time, unchanged (a stream's many small chunks in one).
		data(bytes) {
			wrote = true;
			meter.data(bytes);
			if (piped && !res.write(bytes)) {
				upstream.pause();
				res.once("drain", () => upstream.resume());
			}
		},
		end() {
			meter.settle(true);
			if (piped) res.end();
		},
		error(error) {
			meter.settle(false);
			problem(res, 502, "relay_upstream_failed", `The provider could not be reached: ${error.message}`);
		},
	});
	const stop = () => {
		upstream.destroy();
		meter.settle(false);
	};
	/**
	 * The caller hung up before the answer ended. A stream is cut (the provider stops generating) and
	 * counted as far as it came. A whole request with no answer yet or a plain JSON one is read on to
	 * its end (a provider finishes, and bills, such an answer whoever waits for it), its slot held,
	 * for at most drainMs.
	 */
	const abandon = () => {
		if (meter.settled) return;
		if (!meter.wholeRequest || (answer && streamed())) return stop();
		piped = false;
		upstream.resume();
		drain ??= setTimeout(stop, relayLimits.drainMs).unref();
	};
	res.on("close", () => {
		if (res.writableFinished) return;
		left = true;
		abandon();
	});
}

const servers = new Map<string, Server>();

/**
 * One session's relay holds at most `connections` open (past them a connection is closed at once),
 * and a request's headers come within `headersMs`: an agent that held ~22,000 half-sent requests
 * open ran the gateway out of file descriptors, and other principals' creates failed (EMFILE). At
 * most `calls` model calls are in flight: each is checked against the budget as it starts and
 * counted as it ends, so N at once would take a session N calls past its budget (docs/limits.md).
 */
export const relayLimits = {
	connections: 16,
	headersMs: 10_000,
	/** Model calls in flight at once (a call past them is 429 `relay_calls_limit`). */
	calls: 4,
	/** How long a call whose caller hung up is read on for its usage. */
	drainMs: 600_000,
};

/** Listens on `socket` for one pi (a server already there is replaced): the plan's routes, the sink's budget. */
export function openRelay(socket: string, plan: RelayPlan, sink: RelaySink): void {
	closeRelay(socket);
	mkdirSync(dirname(socket), { recursive: true, mode: 0o700 });
	rmSync(socket, { force: true });
	const relay: Relay = { plan, sink, inFlight: 0 };
	const server = createServer(
		{ headersTimeout: relayLimits.headersMs, connectionsCheckingInterval: 1_000 },
		(req, res) => {
			req.socket.setNoDelay(true);
			forward(req, res, relay).catch((error) => problem(res, 502, "relay_failed", (error as Error).message));
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
