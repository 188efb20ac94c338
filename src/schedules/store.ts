import type { BusyPolicy, MissedPolicy, ScheduleRun, ScheduleRunStatus } from "./schemas.ts";

/** A schedule as kept: its definition, whose it is, and when it fires next (ms; null while disabled). */
export interface StoredSchedule {
	id: string;
	sessionId: string;
	/** The session's owner when the schedule was made: the tick runs as this principal. */
	principal: string;
	message: string;
	intervalSeconds: number | null;
	cron: string | null;
	timezone: string | null;
	enabled: boolean;
	missed: MissedPolicy;
	whenBusy: BusyPolicy;
	nextRunAt: number | null;
	createdAt: string;
	updatedAt: string;
}

/** Why a schedule was not stored: the session's or the principal's cap is reached. */
export type CreateRefusal = "session_full" | "principal_full";

/** One tick's outcome, written once it is known. */
export interface TickOutcome {
	status: Exclude<ScheduleRunStatus, "pending">;
	runId?: string | null;
	detail?: string | null;
}

/** Ticks kept per schedule for its `runs` (newest first); older ones go as new ones come. */
export const keptRuns = 20;

/**
 * Where schedules live: gateway.db on one node (src/store/sqlite/schedules.ts), PostgreSQL in cluster
 * mode (src/store/postgres/schedules.ts), where every node sees the same rows and claim() is what
 * makes a tick fire once whichever nodes are up. Declared here, beside its one user (service.ts,
 * ticker.ts); the composition root hands the implementation over.
 */
export interface ScheduleStore {
	/** Stores it unless the session already has `perSession` or the principal `perPrincipal` schedules (checked atomically). */
	create(
		schedule: StoredSchedule,
		caps: { perSession: number; perPrincipal: number },
	): Promise<CreateRefusal | undefined>;
	get(id: string): Promise<StoredSchedule | undefined>;
	/** A session's schedules, oldest first. */
	list(sessionId: string): Promise<StoredSchedule[]>;
	/** Writes the schedule's definition and next run; false when it is gone. */
	update(schedule: StoredSchedule): Promise<boolean>;
	/** The schedule and its ticks; false when there was none. */
	remove(id: string): Promise<boolean>;
	/** Every schedule of a session and their ticks (the session was deleted). */
	removeSession(sessionId: string): Promise<void>;
	/** Enabled schedules whose next run is at or before `now`, soonest first. */
	due(now: number, limit: number): Promise<StoredSchedule[]>;
	/**
	 * Takes the tick at `tickAt` for this node: moves the schedule's next run from `tickAt` to
	 * `next` and records the tick (`pending`, or `missed` when it will not fire) in one step. Only
	 * one caller in the cluster gets true for a given tick; the others find the row moved on.
	 */
	claim(id: string, tickAt: number, next: number, node: string, status: "pending" | "missed"): Promise<boolean>;
	/** Writes a claimed tick's outcome. */
	finish(id: string, tickAt: number, outcome: TickOutcome): Promise<void>;
	/** The schedule's latest ticks, newest first. */
	runs(id: string, limit: number): Promise<ScheduleRun[]>;
	/**
	 * Records as failed (`detail`) the ticks still pending that nobody will answer: claimed by a node
	 * that is gone (PostgreSQL: its lease ran out), or on one node (SQLite) any that is not among
	 * `inFlight` (`<scheduleId> <tickAt>`: what this gateway is sending now). Returns how many.
	 */
	abandon(inFlight: ReadonlySet<string>, detail: string): Promise<number>;
	/** The tick at `tickAt` if it is claimed and not answered yet, with its schedule (a forwarded tick is checked with it). */
	pendingTick(id: string, tickAt: number): Promise<StoredSchedule | undefined>;
}
