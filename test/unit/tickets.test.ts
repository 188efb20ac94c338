import { describe, expect, it } from "vitest";
import { StreamTickets } from "../../src/http/tickets.ts";

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
});
