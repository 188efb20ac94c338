import { type OutgoingHttpHeaders, validateHeaderName, validateHeaderValue } from "node:http";
import { isIP, connect as netConnect, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { type AnswerHead, BodyReader, FramingError, framingOf, listOf, readHead } from "./http1.ts";

/**
 * The relay's call to a provider: HTTP/1.1 over a connection of its own pool (plain or TLS, kept
 * between calls as node:http's keep-alive agents kept them), the request written at once (the relay
 * has read it whole: request-body.ts), the answer handed on a read at a time, out of its framing
 * (http1.ts). Not node:http's client: it hands a streamed answer on a chunk at a time, a token each
 * for a model, and that cost a sandboxed pi half a direct call's tokens/s (BENCHMARKS.md, "The
 * model relay against a direct call").
 */

export interface UpstreamEvents {
	/** The whole request was handed to the connection (the provider may bill it from now on). */
	sent(): void;
	/** The answer's head (interim 1xx answers are read past). */
	head(head: AnswerHead): void;
	/** The data of one read of the answer's body. */
	data(bytes: Buffer): void;
	/** The body came whole. */
	end(): void;
	/** The call failed (once, and nothing follows): before its head, or with its body cut. */
	error(error: Error): void;
}

/**
 * Idle connections kept, per origin, and for how long (a provider closes its own sooner or later).
 * One it closes just as a call reuses it fails that call (502), as node:http's agent did; pi's SDKs
 * retry a 502.
 */
export const upstreamPool = { idlePerOrigin: 16, idleMs: 60_000 };

const idle = new Map<string, Socket[]>();
/** What ends an idle connection, by connection: taken off again when the connection is reused. */
const dropOf = new WeakMap<Socket, () => void>();
const idleEvents = ["data", "end", "error", "close", "timeout"] as const;
/** The last TLS session of each origin, so a new connection resumes it (as node:https's agent does). */
const tlsSessions = new Map<string, Buffer>();

function park(key: string, socket: Socket): void {
	const list = idle.get(key) ?? [];
	if (list.length >= upstreamPool.idlePerOrigin) return void socket.destroy();
	const drop = () => {
		socket.destroy();
		const at = list.indexOf(socket);
		if (at !== -1) list.splice(at, 1);
	};
	// Anything from an idle connection (bytes, its end, an error) ends it: it is not reused.
	for (const event of idleEvents) socket.on(event, drop);
	dropOf.set(socket, drop);
	socket.setTimeout(upstreamPool.idleMs);
	socket.unref();
	list.push(socket);
	idle.set(key, list);
}

function reuse(key: string): Socket | undefined {
	const list = idle.get(key);
	for (let socket = list?.pop(); socket; socket = list?.pop()) {
		const drop = dropOf.get(socket);
		if (drop) for (const event of idleEvents) socket.off(event, drop);
		if (socket.destroyed || !socket.writable) {
			socket.destroy();
			continue;
		}
		socket.setTimeout(0);
		socket.ref();
		return socket;
	}
	return undefined;
}

function open(target: URL): { key: string; socket: Socket } {
	const secure = target.protocol === "https:";
	const host = target.hostname.replace(/^\[(.*)\]$/, "$1");
	const port = Number(target.port) || (secure ? 443 : 80);
	const key = `${target.protocol}//${host}:${port}`;
	const kept = reuse(key);
	if (kept) return { key, socket: kept };
	if (!secure) return { key, socket: netConnect({ host, port }).setNoDelay(true) };
	const socket = tlsConnect({
		host,
		port,
		servername: isIP(host) ? undefined : host,
		ALPNProtocols: ["http/1.1"],
		session: tlsSessions.get(key),
	});
	socket.on("session", (session: Buffer) => tlsSessions.set(key, session));
	return { key, socket: socket.setNoDelay(true) };
}

/**
 * The request, head and body in one buffer (so one segment on the wire): its line, the host, the
 * caller's headers (checked as node:http checks them), the body's length.
 */
function request(target: URL, method: string, headers: OutgoingHttpHeaders, body: Buffer): Buffer {
	let head = `${method} ${target.pathname}${target.search} HTTP/1.1\r\nHost: ${target.host}\r\n`;
	for (const [name, value] of Object.entries(headers)) {
		if (value === undefined || name.toLowerCase() === "content-length") continue;
		validateHeaderName(name);
		for (const one of Array.isArray(value) ? value : [String(value)]) {
			validateHeaderValue(name, one);
			head += `${name}: ${one}\r\n`;
		}
	}
	if (body.length > 0 || (method !== "GET" && method !== "HEAD")) head += `Content-Length: ${body.length}\r\n`;
	return Buffer.concat([Buffer.from(`${head}\r\n`, "latin1"), body]);
}

/** One call, sent as it is made; `pause` and `resume` hold the answer back, `destroy` ends the call. */
export class UpstreamCall {
	readonly #events: UpstreamEvents;
	readonly #method: string;
	readonly #key: string;
	readonly #socket: Socket;
	#pending = Buffer.alloc(0);
	/** The whole request was handed to the connection. */
	#sent = false;
	#head: AnswerHead | undefined;
	#body: BodyReader | undefined;
	/** Ended: the answer came whole or the call failed; nothing more is reported. */
	#over = false;

	constructor(target: URL, method: string, headers: OutgoingHttpHeaders, body: Buffer, events: UpstreamEvents) {
		const bytes = request(target, method, headers, body);
		this.#events = events;
		this.#method = method;
		({ key: this.#key, socket: this.#socket } = open(target));
		this.#socket.on("data", this.#onData).on("end", this.#onEnd).on("error", this.#fail).on("close", this.#onClose);
		this.#socket.write(bytes, (error) => {
			if (error || this.#over) return;
			this.#sent = true;
			this.#events.sent();
		});
	}

	pause(): void {
		this.#socket.pause();
	}

	resume(): void {
		this.#socket.resume();
	}

	destroy(): void {
		if (this.#over) return;
		this.#over = true;
		this.#socket.destroy();
	}

	readonly #onData = (bytes: Buffer): void => {
		if (this.#over) return;
		try {
			let rest = bytes;
			while (!this.#head) {
				const all = this.#pending.length > 0 ? Buffer.concat([this.#pending, rest]) : rest;
				const head = readHead(all);
				if (!head) {
					this.#pending = Buffer.from(all);
					return;
				}
				this.#pending = Buffer.alloc(0);
				rest = all.subarray(head.length);
				if (head.status === 101) throw new FramingError("the provider switched protocols");
				if (head.status < 200) continue;
				this.#head = head;
				this.#body = new BodyReader(framingOf(this.#method, head));
				this.#events.head(head);
				if (this.#over) return;
			}
			const body = this.#body as BodyReader;
			const data = body.take(rest);
			if (data.length > 0) this.#events.data(data);
			if (body.done && !this.#over) this.#ended();
		} catch (error) {
			this.#fail(error as Error);
		}
	};

	/** The answer came whole: the connection is kept for the next call when HTTP/1.1 lets it be. */
	#ended(): void {
		this.#over = true;
		const head = this.#head as AnswerHead;
		const body = this.#body as BodyReader;
		const kept =
			head.minor === 1 &&
			body.framing.kind !== "close" &&
			body.extra === 0 &&
			this.#sent &&
			!listOf(head.headers.connection).some((v) => v.toLowerCase() === "close");
		this.#socket.off("data", this.#onData).off("end", this.#onEnd).off("error", this.#fail).off("close", this.#onClose);
		this.#socket.resume();
		if (kept) park(this.#key, this.#socket);
		else this.#socket.destroy();
		this.#events.end();
	}

	readonly #onEnd = (): void => {
		if (this.#over) return;
		if (this.#body?.closed()) this.#ended();
		else
			this.#fail(new Error(this.#head ? "the provider's answer was cut short" : "the provider closed the connection"));
	};

	readonly #onClose = (): void => this.#fail(new Error("the provider's connection closed"));

	readonly #fail = (error: Error): void => {
		if (this.#over) return;
		this.#over = true;
		this.#socket.destroy();
		this.#events.error(error);
	};
}
