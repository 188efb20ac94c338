import { describe, expect, it, vi } from "vitest";
import { InFlight } from "../../src/sessions/session/in-flight.ts";

const response = (id: string) => ({ type: "response" as const, id, command: "x", success: true });

describe("InFlight", () => {
	it("settles a command by its id and ignores unknown or late ids", async () => {
		const inFlight = new InFlight();
		const answer = inFlight.add("gw_1", { type: "x" }, 1000);
		expect(inFlight.settle(response("gw_2"))).toBe(false);
		expect(inFlight.settle(response("gw_1"))).toBe(true);
		await expect(answer).resolves.toMatchObject({ id: "gw_1" });
		expect(inFlight.settle(response("gw_1"))).toBe(false);
		expect(inFlight.size).toBe(0);
	});

	// Fake timers (Date too): the deadline is checked to the millisecond, whatever the machine's load.
	it("fails at the deadline with 504, and the clock stops while paused", async () => {
		vi.useFakeTimers();
		try {
			const inFlight = new InFlight();
			let failed: unknown;
			inFlight.add("gw_1", { type: "prompt" }, 120).catch((error: unknown) => {
				failed = error;
			});
			await vi.advanceTimersByTimeAsync(60);
			inFlight.pause();
			await vi.advanceTimersByTimeAsync(10_000);
			expect(inFlight.size).toBe(1);
			inFlight.resume();
			// 60 ms ran before the pause: 60 are left.
			await vi.advanceTimersByTimeAsync(59);
			expect([inFlight.size, failed]).toEqual([1, undefined]);
			await vi.advanceTimersByTimeAsync(1);
			expect(inFlight.size).toBe(0);
			expect(failed).toMatchObject({
				status: 504,
				code: "pi_timeout",
				message: "pi did not answer prompt within 0.1s",
			});
		} finally {
			vi.useRealTimers();
		}
	});

	it("a command added while paused gets no clock until resume", async () => {
		vi.useFakeTimers();
		try {
			const inFlight = new InFlight();
			inFlight.pause();
			const answer = inFlight.add("gw_1", { type: "x" }, 30);
			await vi.advanceTimersByTimeAsync(10_000);
			expect(inFlight.settle(response("gw_1"))).toBe(true);
			await expect(answer).resolves.toBeDefined();
		} finally {
			vi.useRealTimers();
		}
	});

	it("fails everything at once when pi is gone", async () => {
		const inFlight = new InFlight();
		const all = [inFlight.add("a", { type: "x" }, 10_000), inFlight.add("b", { type: "y" }, 10_000)];
		inFlight.failAll(new Error("gone"));
		for (const answer of all) await expect(answer).rejects.toThrow("gone");
		expect(inFlight.size).toBe(0);
	});
});
