import type pg from "pg";
import type { ScheduleRun } from "../../schedules/schemas.ts";
import {
	type CreateRefusal,
	keptRuns,
	type ScheduleStore,
	type StoredSchedule,
	type TickOutcome,
} from "../../schedules/store.ts";
import { GatewayError } from "../../shared/errors.ts";
import { runOf, type ScheduleRow, type ScheduleRunRow, scheduleOf, scheduleRecord } from "../schedule-rows.ts";
import { databaseUnavailable, needDatabase, transaction } from "./schema.ts";

const columns = "id, session_id, principal, record, next_run_at";

/**
 * The cluster's schedules (migration 14): every node reads the same rows, and a tick is claimed by
 * an UPDATE that moves next_run_at on only while it still holds the tick's time, so however many
 * nodes find it due, one wins it. A schedule and its ticks go with their session's row (ON DELETE CASCADE).
 */
export class PostgresSchedules implements ScheduleStore {
	readonly #pool: pg.Pool;

	constructor(pool: pg.Pool) {
		this.#pool = pool;
	}

	create(s: StoredSchedule, caps: { perSession: number; perPrincipal: number }): Promise<CreateRefusal | undefined> {
		return transaction(this.#pool, async (client) => {
			// One principal's creates queue on its lock, so two nodes cannot both pass the count.
			await client.query("SELECT pg_advisory_xact_lock(hashtext('schedules:' || $1))", [s.principal]);
			const count = async (column: string, value: string) =>
				Number(
					(await client.query<{ n: string }>(`SELECT count(*) AS n FROM schedules WHERE ${column} = $1`, [value]))
						.rows[0]?.n,
				);
			if ((await count("session_id", s.sessionId)) >= caps.perSession) return "session_full";
			if ((await count("principal", s.principal)) >= caps.perPrincipal) return "principal_full";
			await client.query(`INSERT INTO schedules (${columns}) VALUES ($1, $2, $3, $4, $5)`, [
				s.id,
				s.sessionId,
				s.principal,
				scheduleRecord(s),
				s.nextRunAt,
			]);
			return undefined;
		}).catch((error: unknown) => {
			// The session's row is gone (deleted meanwhile): as for any other operation on it.
			if ((error as { code?: string }).code === "23503")
				throw new GatewayError(404, "session_not_found", `No session ${s.sessionId}`);
			throw databaseUnavailable("creating a schedule", error);
		});
	}

	async get(id: string): Promise<StoredSchedule | undefined> {
		const { rows } = await needDatabase("reading a schedule", () =>
			this.#pool.query<ScheduleRow>(`SELECT ${columns} FROM schedules WHERE id = $1`, [id]),
		);
		return rows[0] && scheduleOf(rows[0]);
	}

	async list(sessionId: string): Promise<StoredSchedule[]> {
		const { rows } = await needDatabase("reading schedules", () =>
			this.#pool.query<ScheduleRow>(
				`SELECT ${columns} FROM schedules WHERE session_id = $1 ORDER BY record::json->>'createdAt', id`,
				[sessionId],
			),
		);
		return rows.map(scheduleOf);
	}

	async update(s: StoredSchedule): Promise<boolean> {
		const { rowCount } = await needDatabase("changing a schedule", () =>
			this.#pool.query("UPDATE schedules SET record = $2, next_run_at = $3 WHERE id = $1", [
				s.id,
				scheduleRecord(s),
				s.nextRunAt,
			]),
		);
		return rowCount === 1;
	}

	async remove(id: string): Promise<boolean> {
		const { rowCount } = await needDatabase("deleting a schedule", () =>
			this.#pool.query("DELETE FROM schedules WHERE id = $1", [id]),
		);
		return rowCount === 1;
	}

	async removeSession(sessionId: string): Promise<void> {
		await this.#pool.query("DELETE FROM schedules WHERE session_id = $1", [sessionId]);
	}

	async due(now: number, limit: number): Promise<StoredSchedule[]> {
		const { rows } = await this.#pool.query<ScheduleRow>(
			`SELECT ${columns} FROM schedules WHERE next_run_at IS NOT NULL AND next_run_at <= $1 ORDER BY next_run_at LIMIT $2`,
			[now, limit],
		);
		return rows.map(scheduleOf);
	}

	claim(id: string, tickAt: number, next: number, node: string, status: "pending" | "missed"): Promise<boolean> {
		return transaction(this.#pool, async (client) => {
			const moved = await client.query(
				"UPDATE schedules SET next_run_at = $3 WHERE id = $1 AND next_run_at = $2 RETURNING id",
				[id, tickAt, next],
			);
			if (moved.rowCount !== 1) return false;
			const inserted = await client.query(
				"INSERT INTO schedule_runs (schedule_id, tick_at, status, node) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
				[id, tickAt, status, node],
			);
			await client.query(
				`DELETE FROM schedule_runs WHERE schedule_id = $1 AND tick_at NOT IN
					(SELECT tick_at FROM schedule_runs WHERE schedule_id = $1 ORDER BY tick_at DESC LIMIT $2)`,
				[id, keptRuns],
			);
			return inserted.rowCount === 1;
		});
	}

	async finish(id: string, tickAt: number, outcome: TickOutcome): Promise<void> {
		await this.#pool.query(
			"UPDATE schedule_runs SET status = $3, run_id = $4, detail = $5 WHERE schedule_id = $1 AND tick_at = $2",
			[id, tickAt, outcome.status, outcome.runId ?? null, outcome.detail ?? null],
		);
	}

	async runs(id: string, limit: number): Promise<ScheduleRun[]> {
		const { rows } = await needDatabase("reading a schedule's ticks", () =>
			this.#pool.query<ScheduleRunRow>(
				"SELECT tick_at, status, run_id, detail FROM schedule_runs WHERE schedule_id = $1 ORDER BY tick_at DESC LIMIT $2",
				[id, limit],
			),
		);
		return rows.map(runOf);
	}

	async abandon(_inFlight: ReadonlySet<string>, detail: string): Promise<number> {
		// A node that is gone answers none of its ticks; a live node's are its own to answer.
		const { rowCount } = await this.#pool.query(
			`UPDATE schedule_runs SET status = 'failed', detail = $1
			 WHERE status = 'pending' AND node NOT IN (SELECT id FROM nodes WHERE lease_until > now())`,
			[detail],
		);
		return rowCount ?? 0;
	}

	async pendingTick(id: string, tickAt: number): Promise<StoredSchedule | undefined> {
		const { rows } = await this.#pool.query<ScheduleRow>(
			`SELECT ${columns.replace(/(\w+)/g, "s.$1")} FROM schedules s JOIN schedule_runs r ON r.schedule_id = s.id
			 WHERE s.id = $1 AND r.tick_at = $2 AND r.status = 'pending'`,
			[id, tickAt],
		);
		return rows[0] && scheduleOf(rows[0]);
	}
}
