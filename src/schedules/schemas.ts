import { z } from "@hono/zod-openapi";

/** What a tick does when every node was down at its time (found later than missedAfterMs, timing.ts). */
export const MissedPolicy = z.enum(["run-once", "skip"]).openapi("ScheduleMissedPolicy", {
	description:
		"A tick found more than 60 s late (every node was down, or the gateway stopped, at its time): `run-once` runs it once, however many ticks passed, and goes on from now; `skip` records it as `missed` and waits for the next",
});
export type MissedPolicy = z.infer<typeof MissedPolicy>;
/** What a tick does when the session is still running. */
export const BusyPolicy = z.enum(["queue", "skip"]).openapi("ScheduleBusyPolicy", {
	description:
		"A tick that finds the session running: `queue` sends the message as a follow-up (pi runs it when the current run ends); `skip` records the tick as `skipped` and sends nothing",
});
export type BusyPolicy = z.infer<typeof BusyPolicy>;

const message = z
	.string()
	.min(1)
	.max(65_536)
	.openapi({ description: "The prompt each tick sends, as POST …/prompt would", example: "Summarise what changed" });
const intervalSeconds = z
	.number()
	.int()
	.min(1)
	.max(366 * 24 * 3600)
	.openapi({
		description:
			"Run every this many seconds, the first one interval after the schedule is made (at least --schedule-min-interval-seconds, 60 by default). Either this or `cron`",
		example: 3600,
	});
const cron = z.string().min(1).max(200).openapi({
	description:
		"A 5-field cron expression (minute hour day-of-month month day-of-week), read in `timezone`. Either this or `intervalSeconds`",
	example: "0 7 * * 1-5",
});
const timezone = z.string().min(1).max(64).openapi({
	description: "The IANA time zone the cron expression is read in (default UTC); only with `cron`",
	example: "Europe/Paris",
});

export const CreateScheduleBody = z
	.strictObject({
		message,
		intervalSeconds: intervalSeconds.optional(),
		cron: cron.optional(),
		timezone: timezone.optional(),
		enabled: z.boolean().default(true).openapi({ description: "A disabled schedule keeps its place and never fires" }),
		missed: MissedPolicy.default("run-once"),
		whenBusy: BusyPolicy.default("skip"),
	})
	.openapi("CreateScheduleBody", {
		description: "A prompt the session runs on its own: `intervalSeconds` or `cron` (with `timezone`), exactly one",
		example: { message: "Summarise what changed since yesterday", cron: "0 7 * * *", timezone: "Europe/Paris" },
	});
export type CreateScheduleBody = z.infer<typeof CreateScheduleBody>;

export const PatchScheduleBody = z
	.strictObject({
		message: message.optional(),
		intervalSeconds: intervalSeconds.optional(),
		cron: cron.optional(),
		timezone: timezone.optional(),
		enabled: z.boolean().optional().openapi({ description: "Pause (false) or resume (true) the schedule" }),
		missed: MissedPolicy.optional(),
		whenBusy: BusyPolicy.optional(),
	})
	.openapi("PatchScheduleBody", {
		description:
			"The fields to change; the others stay. `intervalSeconds` replaces a cron and `cron` an interval; a change of timing or re-enabling computes the next run from now",
		example: { enabled: false },
	});
export type PatchScheduleBody = z.infer<typeof PatchScheduleBody>;

export const scheduleRunStatuses = ["pending", "started", "queued", "skipped", "missed", "failed"] as const;
export const ScheduleRunStatus = z.enum(scheduleRunStatuses).openapi("ScheduleRunStatus", {
	description:
		"`pending`: claimed, not answered yet; `started`: the prompt started a run; `queued`: it waits behind the running one (whenBusy queue); `skipped`: the session was busy (whenBusy skip); `missed`: late and the schedule says skip; `failed`: refused (budget, limits, key revoked, session gone…), `detail` says why",
});
export type ScheduleRunStatus = z.infer<typeof ScheduleRunStatus>;

export const ScheduleRun = z
	.object({
		runId: z.string().nullable().openapi({ description: "The run the tick started or joined; null when none" }),
		at: z.string().openapi({ format: "date-time", description: "The tick's time (when it was due)" }),
		status: ScheduleRunStatus,
		detail: z.string().nullable().openapi({ description: "Why it failed or was skipped; null otherwise" }),
	})
	.openapi("ScheduleRun", { description: "One tick of a schedule" });
export type ScheduleRun = z.infer<typeof ScheduleRun>;

const scheduleShape = {
	id: z.string().openapi({ description: "The schedule's id", example: "sch_Zt3kq0d1v8uY" }),
	sessionId: z.string().openapi({ description: "The session it prompts" }),
	message: z.string().openapi({ description: "The prompt each tick sends" }),
	intervalSeconds: z.number().int().nullable().openapi({ description: "Seconds between ticks; null with a cron" }),
	cron: z.string().nullable().openapi({ description: "The cron expression; null with an interval" }),
	timezone: z.string().nullable().openapi({ description: "The cron's IANA time zone; null with an interval" }),
	enabled: z.boolean().openapi({ description: "False: paused, it never fires (nextRunAt is null)" }),
	missed: MissedPolicy,
	whenBusy: BusyPolicy,
	nextRunAt: z
		.string()
		.nullable()
		.openapi({ format: "date-time", description: "When it fires next; null while disabled" }),
	createdAt: z.string().openapi({ format: "date-time", description: "When it was made" }),
	updatedAt: z.string().openapi({ format: "date-time", description: "When it was last changed (PATCH)" }),
};

export const scheduleExample = {
	id: "sch_Zt3kq0d1v8uY",
	sessionId: "3f1c2a9e-8d7b-4c6a-9e5f-1a2b3c4d5e6f",
	message: "Summarise what changed since yesterday",
	intervalSeconds: null,
	cron: "0 7 * * *",
	timezone: "Europe/Paris",
	enabled: true,
	missed: "run-once" as const,
	whenBusy: "skip" as const,
	nextRunAt: "2026-12-08T06:00:00.000Z",
	createdAt: "2026-12-07T10:00:00.000Z",
	updatedAt: "2026-12-07T10:00:00.000Z",
};

export const Schedule = z.object(scheduleShape).openapi("Schedule", {
	description: "A prompt its session runs on its own",
	example: scheduleExample,
});
export type Schedule = z.infer<typeof Schedule>;

export const ScheduleDetail = z
	.object({
		...scheduleShape,
		runs: z.array(ScheduleRun).openapi({ description: "Its latest ticks, newest first (20 at most)" }),
	})
	.openapi("ScheduleDetail", {
		description: "A schedule and its latest ticks",
		example: {
			...scheduleExample,
			runs: [{ runId: "c17", at: "2026-12-07T06:00:00.000Z", status: "started" as const, detail: null }],
		},
	});
export type ScheduleDetail = z.infer<typeof ScheduleDetail>;
