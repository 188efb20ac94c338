import type { Logger } from "pino";
import { timingOf } from "./service.ts";
import type { ScheduleStore, StoredSchedule, TickOutcome } from "./store.ts";
import { planTick } from "./timing.ts";

/** What firing a tick came to; `sessionGone`: the session no longer exists, so its schedules go. */
export type Fired = TickOutcome & { sessionGone?: boolean };

/** Sends one tick's prompt (as its principal, wherever the session runs) and says what became of it. */
export type FireTick = (schedule: StoredSchedule, tickAt: number) => Promise<Fired>;

/** Told of each fired tick's outcome once it is recorded (webhooks schedule.fired / schedule.failed). */
export type TickReport = (schedule: StoredSchedule, tickAt: number, outcome: TickOutcome) => void;

/** Due schedules read per look, and ticks in flight at once on one node. */
const batch = 50;
const maxInFlight = 8;
/**
 * Ticks in flight at once for one principal: a tick waits for pi's answer (up to
 * --command-timeout-ms), and an agent can stop its own pi, so without this one principal's ticks
 * would hold every slot and nobody else's schedule would fire. A due tick over it waits for the
 * next look, unclaimed (several schedules due at the same minute all run); once the principal's
 * oldest tick has waited `stuckMs` for its answer, its due ticks are recorded as skipped instead,
 * so that they do not stay due and fill the looks' batches either.
 */
const maxInFlightPerPrincipal = 2;
const stuckMs = 10_000;
const crowded = `its principal has ${maxInFlightPerPrincipal} ticks waiting for an answer already`;
/** How often ticks left pending by a node that is gone are recorded as failed (and at start). */
const abandonEveryMs = 60_000;
const abandoned = "its node stopped before the prompt was answered: it may or may not have run";

/**
 * Every `everyMs` this node looks for due schedules and claims each due tick in the store
 * (claim(): one node in the cluster wins it), then fires the ones it won. A tick found late is
 * run once or recorded as missed, as its schedule says (timing.ts planTick); either way the next
 * tick is computed from now, so a gateway that was down does not make up every tick it slept
 * through. A tick whose prompt fails is recorded as failed; the schedule goes on.
 */
export class ScheduleTicker {
	readonly #store: ScheduleStore;
	readonly #node: string;
	readonly #fire: FireTick;
	readonly #logger: Logger;
	readonly #report: TickReport;
	readonly #inFlight = new Set<Promise<void>>();
	/** The ticks being sent now, as `<scheduleId> <tickAt>`. */
	readonly #sending = new Set<string>();
	/** When each tick in flight was sent, oldest first, per principal. */
	readonly #perPrincipal = new Map<string, number[]>();
	#lastAbandon = 0;
	#timer: NodeJS.Timeout | undefined;
	#stopped = true;
	#warned = false;

	constructor(store: ScheduleStore, node: string, fire: FireTick, logger: Logger, report: TickReport = () => {}) {
		this.#store = store;
		this.#report = report;
		this.#node = node;
		this.#fire = fire;
		this.#logger = logger;
	}

	start(everyMs: number): void {
		this.#stopped = false;
		const loop = async () => {
			await this.check().catch((error: Error) => {
				// Logged once until it works again: a database away for minutes must not flood the log.
				if (!this.#warned) this.#logger.warn({ err: error }, "schedules: cannot read due schedules; retrying");
				this.#warned = true;
			});
			if (!this.#stopped) this.#timer = setTimeout(loop, everyMs).unref();
		};
		this.#timer = setTimeout(loop, 0).unref();
	}

	/** Stops looking; ticks already sent are waited for (their outcome is written). */
	async stop(): Promise<void> {
		this.#stopped = true;
		clearTimeout(this.#timer);
		await Promise.allSettled([...this.#inFlight]);
	}

	/** One look: claims and fires what is due now. */
	async check(now = Date.now()): Promise<void> {
		if (now - this.#lastAbandon >= abandonEveryMs) {
			this.#lastAbandon = now;
			const n = await this.#store.abandon(this.#sending, abandoned);
			if (n > 0) this.#logger.warn({ ticks: n }, "schedules: ticks whose node stopped before answering are failed");
		}
		if (this.#inFlight.size >= maxInFlight) return;
		const due = await this.#store.due(now, batch);
		this.#warned = false;
		for (const schedule of due) {
			if (this.#stopped || this.#inFlight.size >= maxInFlight) return;
			const tickAt = schedule.nextRunAt as number;
			const who = schedule.principal;
			const held = this.#perPrincipal.get(who) ?? [];
			const full = held.length >= maxInFlightPerPrincipal;
			if (full && now - (held[0] as number) < stuckMs) continue;
			const plan = planTick(timingOf(schedule), tickAt, now, schedule.missed);
			const won = await this.#store.claim(schedule.id, tickAt, plan.next, this.#node, plan.fire ? "pending" : "missed");
			if (!won) continue;
			if (!plan.fire) {
				this.#logger.info({ scheduleId: schedule.id, tickAt }, "schedule: a tick missed while down was skipped");
				continue;
			}
			if (full) {
				await this.#store.finish(schedule.id, tickAt, { status: "skipped", detail: crowded });
				continue;
			}
			const key = `${schedule.id} ${tickAt}`;
			const sent = now;
			this.#sending.add(key);
			held.push(sent);
			this.#perPrincipal.set(who, held);
			const firing: Promise<void> = this.#run(schedule, tickAt).finally(() => {
				this.#inFlight.delete(firing);
				this.#sending.delete(key);
				held.splice(held.indexOf(sent), 1);
				if (held.length === 0 && this.#perPrincipal.get(who) === held) this.#perPrincipal.delete(who);
			});
			this.#inFlight.add(firing);
		}
	}

	async #run(schedule: StoredSchedule, tickAt: number): Promise<void> {
		const log = { scheduleId: schedule.id, sessionId: schedule.sessionId, tickAt: new Date(tickAt).toISOString() };
		let fired: Fired;
		try {
			fired = await this.#fire(schedule, tickAt);
		} catch (error) {
			fired = { status: "failed", detail: (error as Error).message };
		}
		const { sessionGone, ...outcome } = fired;
		if (outcome.status === "failed") this.#logger.warn({ ...log, detail: outcome.detail }, "schedule: tick failed");
		else this.#logger.info({ ...log, status: outcome.status, runId: outcome.runId }, "schedule: tick fired");
		try {
			if (sessionGone) await this.#store.removeSession(schedule.sessionId);
			else await this.#store.finish(schedule.id, tickAt, outcome);
		} catch (error) {
			this.#logger.warn({ ...log, err: error }, "schedule: cannot record the tick's outcome");
		}
		// A busy session's skipped tick is the schedule doing what it says: no message.
		if (!sessionGone && outcome.status !== "skipped") this.#report(schedule, tickAt, outcome);
	}
}
