import { CronExpressionParser } from "cron-parser";
import { GatewayError } from "../shared/errors.ts";

/** When a schedule fires: every `intervalSeconds`, or on a 5-field cron read in an IANA zone. */
export type Timing = { intervalSeconds: number } | { cron: string; timezone: string };

/** A tick found later than this was missed (every node was down at its time): the schedule's `missed` says what then. */
export const missedAfterMs = 60_000;

/** 400 in the shape zod's failures have (app.ts's invalid()): the field and what is wrong with it. */
function invalid(path: string, message: string): GatewayError {
	return new GatewayError(400, "invalid_input", `${path}: ${message}`, { issues: [{ path, message }] });
}

/** An IANA zone's name (Europe/Paris, America/Argentina/Buenos_Aires, Etc/GMT+1, UTC), not an offset (+01:00). */
const ianaName = /^[A-Za-z][A-Za-z_]*(\/[A-Za-z0-9_+-]+)*$/;

/** Whether `zone` is an IANA time zone this Node knows (its ICU data). */
function knownZone(zone: string): boolean {
	if (!ianaName.test(zone)) return false;
	try {
		new Intl.DateTimeFormat("en-US", { timeZone: zone });
		return true;
	} catch {
		return false;
	}
}

/**
 * The timing a body asks for, checked before anything is stored: exactly one of `intervalSeconds`
 * and `cron`, an interval of at least `minIntervalSeconds`, a cron of 5 fields that parses and can
 * fire, and a time zone that exists (only beside a cron).
 */
export function checkTiming(
	fields: { intervalSeconds?: number; cron?: string; timezone?: string },
	minIntervalSeconds: number,
): Timing {
	const { intervalSeconds, cron, timezone } = fields;
	if (intervalSeconds !== undefined && cron !== undefined)
		throw invalid("(body)", "give intervalSeconds or cron, not both");
	if (intervalSeconds === undefined && cron === undefined)
		throw invalid("(body)", "give intervalSeconds or cron (with timezone)");
	if (intervalSeconds !== undefined) {
		if (timezone !== undefined) throw invalid("timezone", "a time zone goes with cron, not intervalSeconds");
		if (intervalSeconds < minIntervalSeconds)
			throw invalid("intervalSeconds", `at least ${minIntervalSeconds} seconds (--schedule-min-interval-seconds)`);
		return { intervalSeconds };
	}
	const expression = (cron as string).trim();
	const zone = timezone ?? "UTC";
	if (!knownZone(zone))
		throw invalid("timezone", `${JSON.stringify(zone)} is not an IANA time zone (e.g. Europe/Paris)`);
	const fieldCount = expression.split(/\s+/).length;
	if (fieldCount !== 5 || expression.startsWith("@"))
		throw invalid("cron", "5 fields: minute hour day-of-month month day-of-week (e.g. 0 7 * * 1-5)");
	try {
		CronExpressionParser.parse(expression, { tz: zone, currentDate: new Date() }).next();
	} catch (error) {
		throw invalid("cron", `${JSON.stringify(expression)} is not a cron expression: ${(error as Error).message}`);
	}
	return { cron: expression, timezone: zone };
}

/**
 * The first tick strictly after `after` (ms since the epoch). An interval counts from `anchor` (its
 * last tick, or when it was made), so ticks stay on their grid however late one ran; a cron's next
 * time is read in its zone (daylight saving included, as cron-parser does).
 */
export function nextRun(timing: Timing, anchor: number, after: number): number {
	if ("intervalSeconds" in timing) {
		const step = timing.intervalSeconds * 1000;
		if (anchor > after) return anchor;
		return anchor + (Math.floor((after - anchor) / step) + 1) * step;
	}
	const expression = CronExpressionParser.parse(timing.cron, { tz: timing.timezone, currentDate: new Date(after) });
	return expression.next().getTime();
}

/**
 * What a due tick at `tickAt` is, found at `now`: on time (fire), or missed; and the next tick
 * after now. A missed tick under `run-once` fires once and the ones between are not made up.
 */
export function planTick(
	timing: Timing,
	tickAt: number,
	now: number,
	missed: "run-once" | "skip",
): { fire: boolean; late: boolean; next: number } {
	const late = now - tickAt > missedAfterMs;
	const next = nextRun(timing, tickAt, Math.max(now, tickAt));
	return { fire: !late || missed === "run-once", late, next };
}
