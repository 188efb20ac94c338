import { chmodSync, mkdirSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from "node:http";
import { connect, type Socket } from "node:net";
import { networkInterfaces } from "node:os";
import { dirname } from "node:path";
import { defaultRefusal } from "../../net/address-ranges.ts";
import { type AllowEntry, addressListed, allowedBy, normalHost } from "../../net/egress-allow.ts";
import { embeddedIPv4 } from "../../net/embedded-ipv4.ts";
import { EgressLookups } from "./egress-lookup.ts";

/**
 * The egress proxy of one sandboxed pi's tools (docs/security.md): an HTTP proxy on a unix socket
 * only that sandbox is given, reached from the forwarder on the sandbox's 127.0.0.1:4318, which
 * pi's environment names in HTTP_PROXY and HTTPS_PROXY. A plain request (absolute-form URI) and a
 * CONNECT go out only to a host:port the operator's --sandbox-allow-hosts lists, and only to
 * addresses the gateway resolved itself and checked (a loopback, private, link-local or metadata
 * address, or this host's own, only where an entry names that address); the connection goes to
 * the address checked, never to a second DNS answer, and a plain request's Host is the target's
 * (egress-lookup.ts resolves, off libuv's thread pool). Anything else is 403, and reported.
 */
export type EgressDenialReason = "not_allowed" | "private_address" | "bad_request";
export const egressDenialReasons: readonly EgressDenialReason[] = ["not_allowed", "private_address", "bad_request"];

export interface EgressDenial {
	host: string;
	port: number;
	reason: EgressDenialReason;
	detail: string;
}

export interface EgressSink {
	denied(denial: EgressDenial): void;
}

/**
 * One sandbox's proxy holds at most `connections` open, tunnels included (past them a connection is
 * closed at once; each open tunnel is two descriptors of the gateway's), and a request's headers
 * come within `headersMs`, as the relay's (an agent's half-sent requests ran the gateway out of file
 * descriptors there). Package managers open 10 to 50 at once.
 */
export const egressLimits = { connections: 64, headersMs: 10_000 };
const connectTimeoutMs = 30_000;

class Denied extends Error {
	readonly denial: EgressDenial;
	constructor(denial: EgressDenial) {
		super(denial.detail);
		this.denial = denial;
	}
}

/** What one sandbox's proxy goes by: the allow list, and its own lookups. */
interface Egress {
	entries: readonly AllowEntry[];
	lookups: EgressLookups;
}

/** A signal that aborts once `stream` closes (its client gone: a lookup waiting for it is dropped). */
function whileOpen(stream: { once(event: "close", listener: () => void): unknown }): AbortSignal {
	const open = new AbortController();
	stream.once("close", () => open.abort());
	return open.signal;
}

/**
 * The address to connect to for `host`:`port`, checked; throws Denied, or an Error when it does not
 * resolve. `left` aborts when the client goes.
 */
async function destination(
	{ entries, lookups }: Egress,
	rawHost: string,
	port: number,
	left: AbortSignal,
): Promise<string> {
	const host = normalHost(rawHost);
	const deny = (reason: EgressDenialReason, detail: string) => new Denied({ host, port, reason, detail });
	if (!host || !Number.isInteger(port) || port < 1 || port > 65535)
		throw deny("bad_request", "The request names no host and port the proxy can use");
	if (!allowedBy(entries, host, port))
		throw deny("not_allowed", `${host}:${port} is not in the operator's --sandbox-allow-hosts`);
	const answers = await lookups.addresses(host, left);
	for (const raw of answers) {
		const address = raw.replace(/%.*$/, "");
		if (addressListed(entries, address, port)) continue;
		for (const inner of [address, ...embeddedIPv4(address)]) {
			if (inner !== address && addressListed(entries, inner, port)) continue;
			const why = defaultRefusal(inner, networkInterfaces);
			if (why)
				throw deny(
					"private_address",
					`${host === address ? address : `${host} resolves to ${address}`}, ${why.text}: reached only when --sandbox-allow-hosts names ${inner} itself`,
				);
		}
	}
	return answers[0] as string;
}

function refuse(res: ServerResponse, status: number, text: string): void {
	res.writeHead(status, { "content-type": "text/plain; charset=utf-8", connection: "close" });
	res.end(`${text}\n`);
}

const hopByHop = ["connection", "keep-alive", "proxy-connection", "proxy-authorization", "te", "trailer", "upgrade"];

async function plain(req: IncomingMessage, res: ServerResponse, egress: Egress): Promise<void> {
	let url: URL;
	try {
		url = new URL(req.url ?? "");
		if (url.protocol !== "http:") throw new Error();
	} catch {
		const detail = "Only http:// URLs in absolute form, or CONNECT host:port, go through the proxy";
		throw new Denied({ host: "", port: 0, reason: "bad_request", detail });
	}
	const port = url.port ? Number(url.port) : 80;
	const address = await destination(egress, url.hostname, port, whileOpen(res));
	const headers = { ...req.headers };
	for (const name of hopByHop) delete headers[name];
	// The host checked, never the client's own Host (domain fronting: another site behind an allowed CDN).
	headers.host = url.host;
	const upstream = request({
		host: address,
		port,
		path: `${url.pathname}${url.search}`,
		method: req.method,
		headers,
		setHost: false,
		timeout: connectTimeoutMs,
	});
	upstream.on("response", (answer) => {
		upstream.setTimeout(0);
		const out = { ...answer.headers };
		for (const name of hopByHop) delete out[name];
		res.writeHead(answer.statusCode ?? 502, out);
		answer.pipe(res);
		answer.on("error", () => res.destroy());
	});
	upstream.on("timeout", () => upstream.destroy(new Error("timed out")));
	upstream.on("error", (error) => {
		if (res.headersSent) res.destroy();
		else refuse(res, 502, `The proxy could not reach ${url.host}: ${error.message}`);
	});
	res.on("close", () => {
		if (!res.writableFinished) upstream.destroy();
	});
	req.pipe(upstream);
}

async function tunnel(req: IncomingMessage, client: Socket, head: Buffer, egress: Egress) {
	const match = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(req.url ?? "");
	if (!match) throw new Denied({ host: "", port: 0, reason: "bad_request", detail: "CONNECT needs host:port" });
	const port = Number(match[2]);
	const address = await destination(egress, match[1] as string, port, whileOpen(client));
	const upstream = connect({ host: address, port, timeout: connectTimeoutMs });
	upstream.on("connect", () => {
		upstream.setTimeout(0);
		client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
		if (head.length > 0) upstream.write(head);
		upstream.pipe(client).pipe(upstream);
	});
	upstream.on("timeout", () => upstream.destroy(new Error("timed out")));
	upstream.on("error", (error) => {
		if (upstream.connecting || !client.writable) client.end(statusLine(502, `${req.url}: ${error.message}`));
		client.destroy();
	});
	client.on("error", () => upstream.destroy());
	client.on("close", () => upstream.destroy());
	upstream.on("close", () => client.destroy());
}

function statusLine(status: number, text: string): string {
	const reason = status === 403 ? "Forbidden" : status === 400 ? "Bad Request" : "Bad Gateway";
	const body = `${text}\n`;
	return `HTTP/1.1 ${status} ${reason}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;
}

/** Its status and text for a failure: a denial is 403 (400 for a request it cannot read) and told to the sink. */
function failure(error: unknown, sink: EgressSink): { status: number; text: string } {
	if (!(error instanceof Denied)) return { status: 502, text: `The proxy failed: ${(error as Error).message}` };
	sink.denied(error.denial);
	const status = error.denial.reason === "bad_request" ? 400 : 403;
	return { status, text: `Refused by the gateway's egress proxy: ${error.denial.detail}` };
}

/** Each socket's server, its open tunnels (a CONNECT's socket leaves the server's own count) and its lookups. */
const servers = new Map<string, { server: Server; tunnels: Set<Socket>; lookups: EgressLookups }>();

/** Listens on `socket` for one sandbox's tools (a server already there is replaced). */
export function openEgressProxy(socket: string, entries: readonly AllowEntry[], sink: EgressSink): void {
	closeEgressProxy(socket);
	mkdirSync(dirname(socket), { recursive: true, mode: 0o700 });
	rmSync(socket, { force: true });
	const options = { headersTimeout: egressLimits.headersMs, connectionsCheckingInterval: 1_000 };
	const egress: Egress = { entries, lookups: new EgressLookups() };
	const server = createServer(options, (req, res) => {
		plain(req, res, egress).catch((error) => {
			req.resume();
			const { status, text } = failure(error, sink);
			if (res.headersSent) res.destroy();
			else refuse(res, status, text);
		});
	});
	const tunnels = new Set<Socket>();
	server.on("connect", (req: IncomingMessage, client: Socket, head: Buffer) => {
		client.on("error", () => {});
		tunnels.add(client);
		client.on("close", () => tunnels.delete(client));
		tunnel(req, client, head, egress).catch((error) => {
			const { status, text } = failure(error, sink);
			client.end(statusLine(status, text));
		});
	});
	server.maxConnections = egressLimits.connections;
	server.on("error", () => {});
	server.listen(socket);
	servers.set(socket, { server, tunnels, lookups: egress.lookups });
	try {
		chmodSync(socket, 0o600);
	} catch {}
}

export function closeEgressProxy(socket: string): void {
	const open = servers.get(socket);
	if (!open) return;
	servers.delete(socket);
	open.server.close();
	open.server.closeAllConnections();
	for (const client of open.tunnels) client.destroy();
	open.lookups.close();
	rmSync(socket, { force: true });
}
