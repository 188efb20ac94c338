import { describe, expect, it } from "vitest";
import { StreamTickets } from "../../src/http/auth/tickets.ts";

describe("StreamTickets", () => {
	const tickets = new StreamTickets(60_000);
	const now = Date.UTC(2026, 0, 1);

	it("a ticket opens its own session until it expires, and then no more", () => {
		const { ticket, expiresAt } = tickets.issue("ses_a", now);
		expect(expiresAt).toBe("2026-01-01T00:01:00.000Z");
		expect(ticket).toMatch(/^[0-9a-z]+\.[\w-]{43}$/);
		expect(tickets.verify(ticket, "ses_a", now)).toBe(true);
		expect(tickets.verify(ticket, "ses_a", now + 59_999)).toBe(true);
		expect(tickets.verify(ticket, "ses_a", now + 60_000)).toBe(false);
		expect(tickets.verify(ticket, "ses_b", now)).toBe(false);
	});

	it("a forged expiry, a tampered signature or another gateway's ticket fails", () => {
		const { ticket } = tickets.issue("ses_a", now);
		const [, signature] = ticket.split(".");
		expect(tickets.verify(`${(now + 3_600_000).toString(36)}.${signature}`, "ses_a", now)).toBe(false);
		expect(tickets.verify(`${ticket.slice(0, -2)}AA`, "ses_a", now)).toBe(false);
		expect(tickets.verify(new StreamTickets(60_000).issue("ses_a", now).ticket, "ses_a", now)).toBe(false);
		for (const junk of ["", ".", "x.y", `${ticket}.x`, "zzzzzzzzzzzzzz.aaaa"]) {
			expect(tickets.verify(junk, "ses_a", now)).toBe(false);
		}
	});

	it("a stream opened with a ticket keeps reconnecting with it past the expiry, while it is connected or recently was", () => {
		const bound = new StreamTickets({ ttlMs: 1000, reconnectGraceMs: 30_000, maxLifetimeMs: 3_600_000 });
		const { ticket } = bound.issue("ses_a", now);
		const unused = bound.issue("ses_a", now + 1).ticket;
		const ended = bound.opened(ticket, now + 10);
		expect(bound.verify(ticket, "ses_a", now + 60_000)).toBe(true); // connected: EventSource may retry any time
		expect(bound.verify(unused, "ses_a", now + 60_000)).toBe(false); // never opened a stream: dead at expiry
		expect(bound.verify(ticket, "ses_b", now + 60_000)).toBe(false);
		ended(now + 60_000);
		expect(bound.verify(ticket, "ses_a", now + 89_999)).toBe(true); // the reconnect after a cut
		const again = bound.opened(ticket, now + 89_999);
		again(now + 100_000);
		expect(bound.verify(ticket, "ses_a", now + 129_999)).toBe(true);
		expect(bound.verify(ticket, "ses_a", now + 130_000)).toBe(false); // quiet for the grace: gone
		bound.opened(bound.issue("ses_c", now + 200_000).ticket, now + 200_000);
		expect(bound.boundCount).toBe(1); // the quiet one was swept
	});

	it("no ticket lives past its maximum lifetime, connected or not; scopes do not mix", () => {
		const bound = new StreamTickets({ ttlMs: 1000, reconnectGraceMs: 30_000, maxLifetimeMs: 60_000 });
		const { ticket } = bound.issue("*", now);
		bound.opened(ticket, now);
		expect(bound.verify(ticket, "*", now + 59_999)).toBe(true);
		expect(bound.verify(ticket, "*", now + 60_000)).toBe(false);
		expect(bound.verify(ticket, "ses_a", now)).toBe(false);
		expect(bound.verify(bound.issue("ses_a", now).ticket, "*", now)).toBe(false);
	});
});

describe("StreamTickets: what the key signs is not all that is believed", () => {
	const now = Date.UTC(2026, 0, 1);
	const key = Buffer.alloc(32, 7);

	it("a ticket whose expiry lies further ahead than the TTL (signed with the right key) opens nothing", () => {
		const tickets = new StreamTickets({ ttlMs: 60_000, key });
		// Signed under the same key with a year's lifetime: what anyone holding the key could mint.
		const minted = new StreamTickets({ ttlMs: 365 * 86_400_000, key }).issue("*", now, "admin").ticket;
		expect(tickets.verify(minted, "*", now)).toBe(false);
		expect(tickets.verify(minted, "*", now + 86_400_000)).toBe(false);
		// Bound or not, its reconnects are refused too: its issue time is a year in the future.
		tickets.opened(minted, now);
		expect(tickets.verify(minted, "*", now + 120_000)).toBe(false);
		expect(tickets.mayBeBoundElsewhere(minted, "*", now + 120_000)).toBe(false);
		// A genuine one, expired: another node may hold it bound, up to the maximum lifetime (24 h).
		const genuine = tickets.issue("*", now).ticket;
		expect(tickets.mayBeBoundElsewhere(genuine, "*", now + 30_000)).toBe(false); // not expired: verify decides
		expect(tickets.mayBeBoundElsewhere(genuine, "*", now + 120_000)).toBe(true);
		expect(tickets.mayBeBoundElsewhere(genuine, "ses_a", now + 120_000)).toBe(false);
		expect(tickets.mayBeBoundElsewhere(genuine, "*", now + 86_400_000)).toBe(false);
		// A node whose clock runs a few seconds ahead still issues tickets the others take.
		const ahead = new StreamTickets({ ttlMs: 60_000, key }).issue("*", now + 3000).ticket;
		expect(tickets.verify(ahead, "*", now)).toBe(true);
	});
});
