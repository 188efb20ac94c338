import { describe, expect, it } from "vitest";
import { InFlight } from "../../src/sessions/in-flight.ts";
import { sleep } from "../helpers/gateway.ts";

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

	it("fails at the deadline with 504, and the clock stops while paused", async () => {
		const inFlight = new InFlight();
		const started = Date.now();
		const answer = inFlight.add("gw_1", { type: "prompt" }, 120);
		answer.catch(() => {});
		await sleep(60);
		inFlight.pause();
		await sleep(200);
		expect(inFlight.size).toBe(1);
		inFlight.resume();
		await expect(answer).rejects.toMatchObject({
			status: 504,
			code: "pi_timeout",
			message: "pi did not answer prompt within 0.1s",
		});
		// 60 ms before the pause + ~60 ms after it; the 200 ms paused did not count, but happened.
		expect(Date.now() - started).toBeGreaterThanOrEqual(310);
	});

	it("a command added while paused gets no clock until resume", async () => {
		const inFlight = new InFlight();
		inFlight.pause();
		const answer = inFlight.add("gw_1", { type: "x" }, 30);
		await sleep(100);
		expect(inFlight.settle(response("gw_1"))).toBe(true);
		await expect(answer).resolves.toBeDefined();
	});

	it("fails everything at once when pi is gone", async () => {
		const inFlight = new InFlight();
		const all = [inFlight.add("a", { type: "x" }, 10_000), inFlight.add("b", { type: "y" }, 10_000)];
		inFlight.failAll(new Error("gone"));
		for (const answer of all) await expect(answer).rejects.toThrow("gone");
		expect(inFlight.size).toBe(0);
	});
});
