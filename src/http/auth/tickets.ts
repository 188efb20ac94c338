import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

export interface StreamTicket {
	ticket: string;
	expiresAt: string;
}

/** The scope of a ticket for `GET /v1/events` (session ids never look like this). */
export const allEventsScope = "*";

export interface TicketLifetimes {
	/** How long a ticket opens a new stream. */
	ttlMs: number;
	/**
	 * How long after its last connection ended a stream opened with a ticket may reconnect with
	 * it past `ttlMs`: EventSource retries the same URL after a few seconds (longer while the
	 * network is down), and a 401 ends it for good.
	 */
	reconnectGraceMs?: number;
	/** No ticket works longer than this after it was issued, reconnects included. */
	maxLifetimeMs?: number;
	/** The MAC key; random per process by default. Cluster mode derives one from the cluster secret, so any node checks a ticket. */
	key?: Buffer;
}

interface Bound {
	/** Streams open with this ticket now. */
	connections: number;
	/** When the last of them ended. */
	lastSeen: number;
	issuedAt: number;
}

/**
 * Short-lived credentials for one event stream, for clients that cannot send an Authorization
 * header (the browser's EventSource). A ticket is `<expiry>.<hmac>` over its scope (a session id,
 * or allEventsScope) and the expiry, under a key that lives only in this process (cluster mode: one
 * derived from the cluster secret, which every node holds and the database does not): a restart
 * revokes every ticket, and a ticket opens no other route and no other stream. An expiry further
 * ahead than the TTL (and clockSkewMs) is refused whatever the signature.
 *
 * Within `ttlMs` a ticket opens streams. A stream opened with it is bound to it: its reconnects
 * (EventSource retries the very same URL) keep working past the expiry, while a stream with that
 * ticket is connected or ended less than `reconnectGraceMs` ago, up to `maxLifetimeMs` after the
 * ticket was issued. A ticket that never opened a stream, or whose streams went quiet, is dead at
 * its expiry. Only what is bound is stored: one entry per ticket with a live or recent stream.
 */
/** `<expiry>.[<principal, base64url>.]<hmac>` */
const ticketFormat = /^([0-9a-z]{1,12})\.(?:([\w-]{1,200})\.)?([\w-]{43})$/;

/**
 * How far ahead of this node's clock another node's may run (cluster mode: a ticket issued on one
 * node is checked on another). A ticket may claim to have been issued at most this far in the future.
 */
export const clockSkewMs = 5000;

export class StreamTickets {
	readonly #key: Buffer;
	readonly #ttlMs: number;
	readonly #graceMs: number;
	readonly #maxLifetimeMs: number;
	readonly #bound = new Map<string, Bound>();

	constructor(lifetimes: number | TicketLifetimes) {
		const {
			ttlMs,
			reconnectGraceMs = 5 * 60_000,
			maxLifetimeMs = 24 * 3_600_000,
			key = randomBytes(32),
		} = typeof lifetimes === "number" ? { ttlMs: lifetimes } : lifetimes;
		this.#key = key;
		this.#ttlMs = ttlMs;
		this.#graceMs = reconnectGraceMs;
		this.#maxLifetimeMs = Math.max(maxLifetimeMs, ttlMs);
	}

	/** `principal`: who asked for it; the stream it opens is that principal's (see `principalOf`). */
	issue(scope: string, now = Date.now(), principal?: string): StreamTicket {
		const expires = now + this.#ttlMs;
		const who = principal === undefined ? "" : `${Buffer.from(principal).toString("base64url")}.`;
		return {
			ticket: `${expires.toString(36)}.${who}${this.#sign(scope, expires, principal).toString("base64url")}`,
			expiresAt: new Date(expires).toISOString(),
		};
	}

	/** Whether `ticket` opens a stream of `scope` now: before its expiry, or as a bound stream's reconnect. */
	verify(ticket: string, scope: string, now = Date.now()): boolean {
		const expires = this.#believedExpiry(ticket, scope, now);
		if (expires === undefined) return false;
		if (expires > now) return true;
		const bound = this.#bound.get(ticket);
		if (!bound) return false;
		if (now - bound.issuedAt >= this.#maxLifetimeMs) return false;
		return bound.connections > 0 || now - bound.lastSeen < this.#graceMs;
	}

	/**
	 * Whether a node that served a stream with `ticket` may hold it bound (cluster mode: EventSource's
	 * retry reached another node): signed for `scope`, expired, within its maximum lifetime. Only
	 * that node's `verify` says whether it still opens the stream.
	 */
	mayBeBoundElsewhere(ticket: string, scope: string, now = Date.now()): boolean {
		const expires = this.#believedExpiry(ticket, scope, now);
		return expires !== undefined && expires <= now && now - (expires - this.#ttlMs) < this.#maxLifetimeMs;
	}

	/**
	 * A stream opened with `ticket` (already verified): binds it, so its reconnects keep working.
	 * Returns what to call once that stream has ended (idempotent).
	 */
	opened(ticket: string, now = Date.now()): (end?: number) => void {
		this.#sweep(now);
		const expires = Number.parseInt(ticket.slice(0, ticket.indexOf(".")), 36);
		const bound = this.#bound.get(ticket) ?? { connections: 0, lastSeen: now, issuedAt: expires - this.#ttlMs };
		bound.connections++;
		this.#bound.set(ticket, bound);
		let ended = false;
		return (end = Date.now()) => {
			if (ended) return;
			ended = true;
			bound.connections--;
			bound.lastSeen = end;
		};
	}

	/** Tickets bound now (for tests and leak checks). */
	get boundCount(): number {
		return this.#bound.size;
	}

	#sweep(now: number): void {
		for (const [ticket, bound] of this.#bound) {
			const quiet = bound.connections === 0 && now - bound.lastSeen >= this.#graceMs;
			if (quiet || now - bound.issuedAt >= this.#maxLifetimeMs) this.#bound.delete(ticket);
		}
	}

	/**
	 * The signed expiry, unless it lies further ahead than this node would issue now. The signature
	 * says who issued it, not that it was issued with this TTL: whoever holds the key (or a node
	 * configured otherwise) could sign any expiry. So a ticket lives at most ttlMs (plus the clock
	 * skew), and its reconnects at most maxLifetimeMs from then.
	 */
	#believedExpiry(ticket: string, scope: string, now: number): number | undefined {
		const expires = this.#signedExpiry(ticket, scope);
		return expires !== undefined && expires - this.#ttlMs <= now + clockSkewMs ? expires : undefined;
	}

	/** The expiry a well-formed ticket for `scope` carries under this process's key, else undefined. */
	#signedExpiry(ticket: string, scope: string): number | undefined {
		const match = ticketFormat.exec(ticket);
		if (!match) return undefined;
		const expires = Number.parseInt(match[1] as string, 36);
		const given = Buffer.from(match[3] as string, "base64url");
		const expected = this.#sign(scope, expires, this.principalOf(ticket));
		return given.length === expected.length && timingSafeEqual(given, expected) ? expires : undefined;
	}

	/** The principal a ticket was issued to (signed with it; read it only after `verify`). */
	principalOf(ticket: string): string | undefined {
		const who = ticketFormat.exec(ticket)?.[2];
		return who === undefined ? undefined : Buffer.from(who, "base64url").toString();
	}

	#sign(scope: string, expires: number, principal?: string): Buffer {
		const who = principal === undefined ? "" : `\n${principal}`;
		return createHmac("sha256", this.#key).update(`${scope}\n${expires}${who}`).digest();
	}
}
