import { randomBytes } from "node:crypto";
import { GatewayError } from "../shared/errors.ts";
import type { CreateScheduleBody, PatchScheduleBody, Schedule, ScheduleDetail } from "./schemas.ts";
import { keptRuns, type ScheduleStore, type StoredSchedule } from "./store.ts";
import { checkTiming, nextRun, type Timing } from "./timing.ts";

export interface ScheduleSettings {
	scheduleMinIntervalSeconds: number;
	maxSchedulesPerSession: number;
	maxSchedulesPerPrincipal: number;
}

const notFound = (id: string) => new GatewayError(404, "schedule_not_found", `No schedule ${id} on this session`);

export const timingOf = (s: Pick<StoredSchedule, "intervalSeconds" | "cron" | "timezone">): Timing =>
	s.intervalSeconds !== null
		? { intervalSeconds: s.intervalSeconds }
		: { cron: s.cron as string, timezone: s.timezone ?? "UTC" };

/** A stored schedule as the API shows it (times as ISO strings; the principal stays inside). */
export function scheduleView(s: StoredSchedule): Schedule {
	return {
		id: s.id,
		sessionId: s.sessionId,
		message: s.message,
		intervalSeconds: s.intervalSeconds,
		cron: s.cron,
		timezone: s.timezone,
		enabled: s.enabled,
		missed: s.missed,
		whenBusy: s.whenBusy,
		nextRunAt: s.enabled && s.nextRunAt !== null ? new Date(s.nextRunAt).toISOString() : null,
		createdAt: s.createdAt,
		updatedAt: s.updatedAt,
	};
}

/**
 * Schedules: a session's prompts that run on their own (docs/schedules.md). Each belongs to its
 * session and runs as the session's owner; the caller's right to the session is checked by the
 * route, the caps here (per session, per principal, atomically in the store). Timing is checked
 * before anything is stored. The ticks themselves are ticker.ts's.
 */
export class ScheduleService {
	readonly #store: ScheduleStore;
	readonly #settings: ScheduleSettings;

	constructor(store: ScheduleStore, settings: ScheduleSettings) {
		this.#store = store;
		this.#settings = settings;
	}

	async create(sessionId: string, principal: string, body: CreateScheduleBody, now = Date.now()): Promise<Schedule> {
		const timing = checkTiming(body, this.#settings.scheduleMinIntervalSeconds);
		const at = new Date(now).toISOString();
		const schedule: StoredSchedule = {
			id: `sch_${randomBytes(12).toString("base64url")}`,
			sessionId,
			principal,
			message: body.message,
			...fieldsOf(timing),
			enabled: body.enabled,
			missed: body.missed,
			whenBusy: body.whenBusy,
			nextRunAt: body.enabled ? firstRun(timing, now) : null,
			createdAt: at,
			updatedAt: at,
		};
		const refused = await this.#store.create(schedule, {
			perSession: this.#settings.maxSchedulesPerSession,
			perPrincipal: this.#settings.maxSchedulesPerPrincipal,
		});
		if (refused === "session_full")
			throw new GatewayError(
				429,
				"too_many_schedules",
				`Session ${sessionId} has ${this.#settings.maxSchedulesPerSession} schedules already (--max-schedules-per-session)`,
			);
		if (refused === "principal_full")
			throw new GatewayError(
				429,
				"too_many_schedules",
				`${principal} has ${this.#settings.maxSchedulesPerPrincipal} schedules already (--max-schedules-per-principal)`,
			);
		return scheduleView(schedule);
	}

	async list(sessionId: string): Promise<Schedule[]> {
		return (await this.#store.list(sessionId)).map(scheduleView);
	}

	async get(sessionId: string, id: string): Promise<ScheduleDetail> {
		const schedule = await this.#find(sessionId, id);
		return { ...scheduleView(schedule), runs: await this.#store.runs(id, keptRuns) };
	}

	async patch(sessionId: string, id: string, body: PatchScheduleBody, now = Date.now()): Promise<Schedule> {
		const old = await this.#find(sessionId, id);
		const retimed = body.intervalSeconds !== undefined || body.cron !== undefined || body.timezone !== undefined;
		let timing = timingOf(old);
		if (retimed) {
			// A new interval replaces the cron and a new cron the interval; a zone alone re-reads the cron.
			const fields =
				body.intervalSeconds !== undefined || body.cron !== undefined
					? { intervalSeconds: body.intervalSeconds, cron: body.cron, timezone: body.timezone }
					: { cron: old.cron ?? undefined, timezone: body.timezone };
			timing = checkTiming(fields, this.#settings.scheduleMinIntervalSeconds);
		}
		const enabled = body.enabled ?? old.enabled;
		const restart = retimed || (enabled && !old.enabled);
		const schedule: StoredSchedule = {
			...old,
			message: body.message ?? old.message,
			...fieldsOf(timing),
			enabled,
			missed: body.missed ?? old.missed,
			whenBusy: body.whenBusy ?? old.whenBusy,
			nextRunAt: !enabled ? null : restart || old.nextRunAt === null ? firstRun(timing, now) : old.nextRunAt,
			updatedAt: new Date(now).toISOString(),
		};
		if (!(await this.#store.update(schedule))) throw notFound(id);
		return scheduleView(schedule);
	}

	async delete(sessionId: string, id: string): Promise<void> {
		await this.#find(sessionId, id);
		if (!(await this.#store.remove(id))) throw notFound(id);
	}

	/** The session was deleted: its schedules go with it. */
	deleteSession(sessionId: string): Promise<void> {
		return this.#store.removeSession(sessionId);
	}

	/** A tick claimed and not answered yet, with its schedule (a tick another node forwarded is checked with it). */
	pendingTick(id: string, tickAt: number): Promise<StoredSchedule | undefined> {
		return this.#store.pendingTick(id, tickAt);
	}

	async #find(sessionId: string, id: string): Promise<StoredSchedule> {
		const schedule = await this.#store.get(id);
		// Another session's schedule is not there, as another principal's session is not.
		if (!schedule || schedule.sessionId !== sessionId) throw notFound(id);
		return schedule;
	}
}

function fieldsOf(timing: Timing): Pick<StoredSchedule, "intervalSeconds" | "cron" | "timezone"> {
	return "intervalSeconds" in timing
		? { intervalSeconds: timing.intervalSeconds, cron: null, timezone: null }
		: { intervalSeconds: null, cron: timing.cron, timezone: timing.timezone };
}

/** The first tick from `now`: one interval on, or the cron's next time. */
function firstRun(timing: Timing, now: number): number {
	return "intervalSeconds" in timing ? now + timing.intervalSeconds * 1000 : nextRun(timing, now, now);
}
