import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

export interface StreamTicket {
	ticket: string;
	expiresAt: string;
}

/**
 * Short-lived credentials for one session's event stream, for clients that cannot send an
 * Authorization header (the browser's EventSource). A ticket is `<expiry>.<hmac>` over the session
 * id and the expiry, under a key that lives only in this process: nothing is stored, a restart
 * revokes every ticket, and a ticket opens no other route and no other session.
 */
export class StreamTickets {
	readonly #key = randomBytes(32);
	readonly #ttlMs: number;

	constructor(ttlMs: number) {
		this.#ttlMs = ttlMs;
	}

	issue(sessionId: string, now = Date.now()): StreamTicket {
		const expires = now + this.#ttlMs;
		return {
			ticket: `${expires.toString(36)}.${this.#sign(sessionId, expires).toString("base64url")}`,
			expiresAt: new Date(expires).toISOString(),
		};
	}

	/** Valid until it expires, for as many reconnects as the client needs in that time. */
	verify(ticket: string, sessionId: string, now = Date.now()): boolean {
		const match = /^([0-9a-z]{1,12})\.([\w-]{43})$/.exec(ticket);
		if (!match) return false;
		const expires = Number.parseInt(match[1] as string, 36);
		if (!(expires > now)) return false;
		const given = Buffer.from(match[2] as string, "base64url");
		const expected = this.#sign(sessionId, expires);
		return given.length === expected.length && timingSafeEqual(given, expected);
	}

	#sign(sessionId: string, expires: number): Buffer {
		return createHmac("sha256", this.#key).update(`${sessionId}\n${expires}`).digest();
	}
}
