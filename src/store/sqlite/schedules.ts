import type { DatabaseSync } from "node:sqlite";
import type { ScheduleRun } from "../../schedules/schemas.ts";
import {
	type CreateRefusal,
	keptRuns,
	type ScheduleStore,
	type StoredSchedule,
	type TickOutcome,
} from "../../schedules/store.ts";
import { runOf, type ScheduleRow, type ScheduleRunRow, scheduleOf, scheduleRecord } from "../schedule-rows.ts";
import { scheduleTables } from "./schema.ts";

const columns = "id, session_id, principal, record, next_run_at";

/**
 * Schedules in gateway.db, one node's (cluster mode keeps them in PostgreSQL: ../postgres/schedules.ts).
 * Every call is one synchronous statement or transaction on the one handle, so a cap's count and
 * its insert, or a tick's claim and its row, cannot interleave with another's.
 */
export class SqliteScheduleStore implements ScheduleStore {
	readonly #db: DatabaseSync;

	constructor(db: DatabaseSync) {
		this.#db = db;
		db.exec(scheduleTables);
	}

	async create(
		s: StoredSchedule,
		caps: { perSession: number; perPrincipal: number },
	): Promise<CreateRefusal | undefined> {
		return this.#transaction(() => {
			if (this.#count("session_id", s.sessionId) >= caps.perSession) return "session_full";
			if (this.#count("principal", s.principal) >= caps.perPrincipal) return "principal_full";
			this.#db
				.prepare(`INSERT INTO schedules (${columns}) VALUES (?, ?, ?, ?, ?)`)
				.run(s.id, s.sessionId, s.principal, scheduleRecord(s), s.nextRunAt);
			return undefined;
		});
	}

	async get(id: string): Promise<StoredSchedule | undefined> {
		const row = this.#db.prepare(`SELECT ${columns} FROM schedules WHERE id = ?`).get(id) as ScheduleRow | undefined;
		return row && scheduleOf(row);
	}

	async list(sessionId: string): Promise<StoredSchedule[]> {
		const rows = this.#db
			.prepare(`SELECT ${columns} FROM schedules WHERE session_id = ? ORDER BY rowid`)
			.all(sessionId) as unknown as ScheduleRow[];
		return rows.map(scheduleOf);
	}

	async update(s: StoredSchedule): Promise<boolean> {
		const { changes } = this.#db
			.prepare("UPDATE schedules SET record = ?, next_run_at = ? WHERE id = ?")
			.run(scheduleRecord(s), s.nextRunAt, s.id);
		return Number(changes) === 1;
	}

	async remove(id: string): Promise<boolean> {
		return this.#transaction(() => {
			this.#db.prepare("DELETE FROM schedule_runs WHERE schedule_id = ?").run(id);
			return Number(this.#db.prepare("DELETE FROM schedules WHERE id = ?").run(id).changes) === 1;
		});
	}

	async removeSession(sessionId: string): Promise<void> {
		if (!this.#db.isOpen) return;
		this.#transaction(() => {
			this.#db
				.prepare("DELETE FROM schedule_runs WHERE schedule_id IN (SELECT id FROM schedules WHERE session_id = ?)")
				.run(sessionId);
			this.#db.prepare("DELETE FROM schedules WHERE session_id = ?").run(sessionId);
		});
	}

	async due(now: number, limit: number): Promise<StoredSchedule[]> {
		if (!this.#db.isOpen) return [];
		const rows = this.#db
			.prepare(
				`SELECT ${columns} FROM schedules WHERE next_run_at IS NOT NULL AND next_run_at <= ? ORDER BY next_run_at LIMIT ?`,
			)
			.all(now, limit) as unknown as ScheduleRow[];
		return rows.map(scheduleOf);
	}

	async claim(id: string, tickAt: number, next: number, node: string, status: "pending" | "missed"): Promise<boolean> {
		if (!this.#db.isOpen) return false;
		return this.#transaction(() => {
			const moved = this.#db
				.prepare("UPDATE schedules SET next_run_at = ? WHERE id = ? AND next_run_at = ?")
				.run(next, id, tickAt);
			if (Number(moved.changes) !== 1) return false;
			const inserted = this.#db
				.prepare(
					"INSERT INTO schedule_runs (schedule_id, tick_at, status, node) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
				)
				.run(id, tickAt, status, node);
			// Only the newest ticks are kept.
			this.#db
				.prepare(
					"DELETE FROM schedule_runs WHERE schedule_id = ? AND tick_at NOT IN (SELECT tick_at FROM schedule_runs WHERE schedule_id = ? ORDER BY tick_at DESC LIMIT ?)",
				)
				.run(id, id, keptRuns);
			return Number(inserted.changes) === 1;
		});
	}

	async finish(id: string, tickAt: number, outcome: TickOutcome): Promise<void> {
		if (!this.#db.isOpen) return;
		this.#db
			.prepare("UPDATE schedule_runs SET status = ?, run_id = ?, detail = ? WHERE schedule_id = ? AND tick_at = ?")
			.run(outcome.status, outcome.runId ?? null, outcome.detail ?? null, id, tickAt);
	}

	async runs(id: string, limit: number): Promise<ScheduleRun[]> {
		const rows = this.#db
			.prepare(
				"SELECT tick_at, status, run_id, detail FROM schedule_runs WHERE schedule_id = ? ORDER BY tick_at DESC LIMIT ?",
			)
			.all(id, limit) as unknown as ScheduleRunRow[];
		return rows.map(runOf);
	}

	async abandon(inFlight: ReadonlySet<string>, detail: string): Promise<number> {
		if (!this.#db.isOpen) return 0;
		const pending = this.#db
			.prepare("SELECT schedule_id, tick_at FROM schedule_runs WHERE status = 'pending'")
			.all() as { schedule_id: string; tick_at: number }[];
		const stale = pending.filter((row) => !inFlight.has(`${row.schedule_id} ${row.tick_at}`));
		const fail = this.#db.prepare(
			"UPDATE schedule_runs SET status = 'failed', detail = ? WHERE schedule_id = ? AND tick_at = ? AND status = 'pending'",
		);
		for (const row of stale) fail.run(detail, row.schedule_id, row.tick_at);
		return stale.length;
	}

	async pendingTick(id: string, tickAt: number): Promise<StoredSchedule | undefined> {
		const row = this.#db
			.prepare("SELECT status FROM schedule_runs WHERE schedule_id = ? AND tick_at = ?")
			.get(id, tickAt) as { status: string } | undefined;
		return row?.status === "pending" ? await this.get(id) : undefined;
	}

	#count(column: "session_id" | "principal", value: string): number {
		return Number(
			(this.#db.prepare(`SELECT count(*) AS n FROM schedules WHERE ${column} = ?`).get(value) as { n: number }).n,
		);
	}

	#transaction<T>(work: () => T): T {
		this.#db.exec("BEGIN IMMEDIATE");
		try {
			const result = work();
			this.#db.exec("COMMIT");
			return result;
		} catch (error) {
			this.#db.exec("ROLLBACK");
			throw error;
		}
	}
}
