import { describe, expect, it } from "vitest";
import { checkTiming, missedAfterMs, nextRun, planTick } from "../../src/schedules/timing.ts";
import { GatewayError } from "../../src/shared/errors.ts";

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();

/** The issue's path and message of a refusal, or "ok". */
function refusal(fields: Parameters<typeof checkTiming>[0], min = 60): string {
	try {
		checkTiming(fields, min);
		return "ok";
	} catch (error) {
		expect(error).toBeInstanceOf(GatewayError);
		expect((error as GatewayError).status).toBe(400);
		return ((error as GatewayError).extra.issues as { path: string }[])[0]?.path as string;
	}
}

describe("checkTiming", () => {
	it("takes exactly one of intervalSeconds and cron, an interval of at least the minimum, a zone only with a cron", () => {
		expect(refusal({ intervalSeconds: 60 })).toBe("ok");
		expect(refusal({ intervalSeconds: 59 })).toBe("intervalSeconds");
		expect(refusal({ intervalSeconds: 1 }, 1)).toBe("ok");
		expect(refusal({})).toBe("(body)");
		expect(refusal({ intervalSeconds: 60, cron: "* * * * *" })).toBe("(body)");
		expect(refusal({ intervalSeconds: 60, timezone: "UTC" })).toBe("timezone");
	});

	it("takes a 5-field cron that parses, in an IANA zone (UTC by default)", () => {
		expect(checkTiming({ cron: " 0 7 * * 1-5 " }, 60)).toEqual({ cron: "0 7 * * 1-5", timezone: "UTC" });
		expect(checkTiming({ cron: "*/15 * * * *", timezone: "America/New_York" }, 60)).toEqual({
			cron: "*/15 * * * *",
			timezone: "America/New_York",
		});
		for (const cron of ["61 * * * *", "* * * *", "0 0 * * * *", "@daily", "0 0 30 2 *", "a b c d e"])
			expect(refusal({ cron }), cron).toBe("cron");
		for (const timezone of ["Mars/Olympus_Mons", "Europe/Pariss", "+01:00", ""])
			expect(refusal({ cron: "0 7 * * *", timezone }), timezone).toBe("timezone");
	});
});

describe("nextRun", () => {
	it("keeps an interval on its grid from its anchor, however late it is asked", () => {
		const anchor = at("2026-01-01T00:00:00Z");
		const hour = { intervalSeconds: 3600 };
		expect(iso(nextRun(hour, anchor, anchor))).toBe("2026-01-01T01:00:00.000Z");
		expect(iso(nextRun(hour, anchor, anchor + 1))).toBe("2026-01-01T01:00:00.000Z");
		expect(iso(nextRun(hour, anchor, at("2026-01-01T05:30:00Z")))).toBe("2026-01-01T06:00:00.000Z");
		expect(iso(nextRun(hour, anchor, at("2026-01-01T06:00:00Z")))).toBe("2026-01-01T07:00:00.000Z");
		// An anchor still ahead is the next run.
		expect(iso(nextRun(hour, anchor, anchor - 5000))).toBe("2026-01-01T00:00:00.000Z");
	});

	it("reads a cron in its zone, daylight saving included", () => {
		const paris = { cron: "0 7 * * *", timezone: "Europe/Paris" };
		// Winter: UTC+1; summer: UTC+2.
		expect(iso(nextRun(paris, 0, at("2026-01-10T12:00:00Z")))).toBe("2026-01-11T06:00:00.000Z");
		expect(iso(nextRun(paris, 0, at("2026-07-10T12:00:00Z")))).toBe("2026-07-11T05:00:00.000Z");
		// Across the spring change (29 March 2026): the day before at 06:00 UTC, the day of at 05:00 UTC.
		expect(iso(nextRun(paris, 0, at("2026-03-28T07:00:00Z")))).toBe("2026-03-29T05:00:00.000Z");
		// Strictly after: a tick at the very time asks for the following one.
		expect(iso(nextRun(paris, 0, at("2026-01-11T06:00:00Z")))).toBe("2026-01-12T06:00:00.000Z");
		const weekdays = { cron: "30 9 * * 1-5", timezone: "UTC" };
		// Friday 2026-01-09 after 09:30 → Monday 2026-01-12.
		expect(iso(nextRun(weekdays, 0, at("2026-01-09T10:00:00Z")))).toBe("2026-01-12T09:30:00.000Z");
	});
});

describe("planTick", () => {
	const minute = { intervalSeconds: 60 };
	const tick = at("2026-01-01T00:00:00Z");

	it("fires a tick on time and schedules the next on the grid", () => {
		expect(planTick(minute, tick, tick + 300, "skip")).toEqual({ fire: true, late: false, next: tick + 60_000 });
	});

	it("a tick found later than the grace was missed: run once (not once per tick slept through) or skipped", () => {
		const now = tick + missedAfterMs + 5 * 60_000 + 1;
		const next = tick + 7 * 60_000;
		expect(planTick(minute, tick, now, "run-once")).toEqual({ fire: true, late: true, next });
		expect(planTick(minute, tick, now, "skip")).toEqual({ fire: false, late: true, next });
		const daily = { cron: "0 7 * * *", timezone: "UTC" };
		const sevenAm = at("2026-01-01T07:00:00Z");
		expect(planTick(daily, sevenAm, at("2026-01-03T12:00:00Z"), "run-once")).toEqual({
			fire: true,
			late: true,
			next: at("2026-01-04T07:00:00Z"),
		});
	});
});
