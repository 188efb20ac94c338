import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Logger } from "pino";

export interface ConnectionLimits {
	/** Open connections at most; past it a half-open one is evicted, else the newcomer is refused. */
	maxConnections: number;
	/** New connections without a complete request head at most; past it the oldest goes. */
	maxHalfOpenConnections: number;
}

// Written straight to the socket, before any parser, router or logger: an over-cap answer costs one write.
const overCap = Buffer.from(
	[
		"HTTP/1.1 503 Service Unavailable",
		"Content-Type: application/problem+json",
		"Connection: close",
		"Retry-After: 1",
		"",
		JSON.stringify({
			type: "urn:pi-gateway:problem:too_many_connections",
			title: "Service Unavailable",
			status: 503,
			code: "too_many_connections",
			detail: "The gateway holds as many connections as it allows (--max-connections); try again",
		}),
	].join("\r\n"),
);

/**
 * Connection bounds against slowloris: every open socket is counted, and those that have not sent
 * a complete request head yet are "half-open".
 * Half-open sockets are the cheap ones to hold for an attacker and to drop for the gateway: at
 * either cap the oldest one is closed, so a flood of slow connections cannot lock real clients out
 * (they complete their headers at once and stop being half-open). Established requests, SSE streams
 * included, are never evicted; when every slot holds one, a newcomer gets a 503 written raw.
 * Node's headersTimeout/requestTimeout (set on the server) bound how long any one can dawdle.
 */
export class ConnectionGuard {
	readonly #limits: ConnectionLimits;
	readonly #logger: Logger;
	readonly #open = new Set<Socket>();
	/** Insertion order is age: the first entry is the oldest half-open socket. */
	readonly #halfOpen = new Set<Socket>();
	/**
	 * Between keep-alive requests. Not half-open (a client's pool keeps these, and Node's
	 * keepAliveTimeout ends them), but the first to go when the total cap is reached.
	 */
	readonly #idle = new Set<Socket>();
	evicted = 0;
	refused = 0;

	constructor(limits: ConnectionLimits, logger: Logger) {
		this.#limits = limits;
		this.#logger = logger;
	}

	get open(): number {
		return this.#open.size;
	}

	get halfOpen(): number {
		return this.#halfOpen.size;
	}

	attach(server: Server): void {
		server.on("connection", (socket: Socket) => this.#onConnection(socket));
		server.on("request", (req: IncomingMessage, res: ServerResponse) => {
			const socket = req.socket;
			this.#halfOpen.delete(socket);
			this.#idle.delete(socket);
			res.once("finish", () => {
				if (this.#open.has(socket) && !socket.destroyed) this.#idle.add(socket);
			});
		});
	}

	#onConnection(socket: Socket): void {
		const { maxConnections, maxHalfOpenConnections } = this.#limits;
		if (this.#halfOpen.size >= maxHalfOpenConnections) this.#evictOldest(this.#halfOpen);
		if (this.#open.size >= maxConnections && !this.#evictOldest(this.#halfOpen) && !this.#evictOldest(this.#idle)) {
			this.refused++;
			if (this.refused === 1 || this.refused % 1000 === 0) {
				this.#logger.warn({ open: this.#open.size, refused: this.refused }, "connection cap reached; refusing");
			}
			socket.write(overCap, () => socket.destroy());
			return;
		}
		this.#open.add(socket);
		this.#halfOpen.add(socket);
		socket.once("close", () => this.#forget(socket));
	}

	#forget(socket: Socket): void {
		this.#open.delete(socket);
		this.#halfOpen.delete(socket);
		this.#idle.delete(socket);
	}

	#evictOldest(from: Set<Socket>): boolean {
		const oldest = from.values().next().value;
		if (!oldest) return false;
		this.#forget(oldest);
		oldest.destroy();
		this.evicted++;
		if (this.evicted === 1 || this.evicted % 1000 === 0) {
			this.#logger.warn({ evicted: this.evicted }, "half-open connections over the cap; oldest closed");
		}
		return true;
	}
}
