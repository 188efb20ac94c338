import type { ScheduleRun } from "../schedules/schemas.ts";
import type { StoredSchedule } from "../schedules/store.ts";

/**
 * A schedule's row, the same in gateway.db and PostgreSQL: who and where in columns (the due query
 * and the caps read them), the definition as JSON text, and the next run in ms (null while disabled).
 */
export interface ScheduleRow {
	id: string;
	session_id: string;
	principal: string;
	record: string;
	next_run_at: number | string | null;
}

export interface ScheduleRunRow {
	tick_at: number | string;
	status: string;
	run_id: string | null;
	detail: string | null;
}

type Definition = Omit<StoredSchedule, "id" | "sessionId" | "principal" | "nextRunAt">;

export function scheduleRecord(s: StoredSchedule): string {
	const { id: _id, sessionId: _session, principal: _principal, nextRunAt: _next, ...definition } = s;
	return JSON.stringify(definition satisfies Definition);
}

export function scheduleOf(row: ScheduleRow): StoredSchedule {
	const definition = JSON.parse(row.record) as Definition;
	return {
		...definition,
		id: row.id,
		sessionId: row.session_id,
		principal: row.principal,
		// PostgreSQL answers bigint as text.
		nextRunAt: row.next_run_at === null ? null : Number(row.next_run_at),
	};
}

export function runOf(row: ScheduleRunRow): ScheduleRun {
	return {
		runId: row.run_id,
		at: new Date(Number(row.tick_at)).toISOString(),
		status: row.status as ScheduleRun["status"],
		detail: row.detail,
	};
}
