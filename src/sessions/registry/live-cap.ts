import type { Config } from "../../config/config.ts";
import { GatewayError } from "../../shared/errors.ts";
import type { Session } from "../session/session.ts";
import type { WarmPools } from "./warm-pool.ts";

/**
 * A principal's share of the live slots: `max` sessions with a pi process at once (0: not held to
 * one, as an admin's sessions are).
 */
export interface LiveShare {
	owner: string;
	max: number;
}

/** `owner`'s share: --max-live-sessions-per-principal, or none for an admin (the operator). */
export function liveShare(
	config: Pick<Config, "maxLiveSessionsPerPrincipal">,
	owner: string,
	admin: boolean,
): LiveShare {
	return { owner, max: admin ? 0 : config.maxLiveSessionsPerPrincipal };
}

/** What the cap counts and may stop: the registry's sessions and its warm pool. */
export interface LiveCapHost {
	sessions(): Iterable<Session>;
	pool(): WarmPools | undefined;
	/** Thrown when the gateway began to stop while a start waited for its victim. */
	stopping(): Error | undefined;
	/** The share a session counts in, for sessions the cap was not told of (restored at start). */
	shareOf?(session: Session): LiveShare | undefined;
}

/**
 * --max-live-sessions: how many pi processes may run at once, and each principal's share of them
 * (--max-live-sessions-per-principal, DESIGN "Fair shares"). A start past its principal's share
 * hibernates that principal's own least recently used idle session, and is refused (429) when none
 * is idle: one principal's busy sessions never take another's slots. Past the whole cap a start
 * first takes a warm pool process's slot, then hibernates an idle session of the principal that
 * holds the most (the least recently used of them), and is refused (429) when none is idle enough.
 */
export class LiveCap {
	readonly #max: number;
	readonly #host: LiveCapHost;
	/** Process slots promised to a start that waits for its victim to exit. */
	#reserved = 0;
	/** Starts admitted to a share and not yet live or given up, by owner. */
	readonly #admitted = new Map<string, number>();
	readonly #shares = new WeakMap<Session, LiveShare>();

	constructor(max: number, host: LiveCapHost) {
		this.#max = max;
		this.#host = host;
	}

	/** Sessions with a pi process that is not on its way out, plus slots promised to starts and the warm pool. */
	get count(): number {
		let live = this.#reserved + (this.#host.pool()?.size ?? 0);
		for (const s of this.#host.sessions()) if (s.hasProcess && !s.isStopping) live++;
		return live;
	}

	get hasRoom(): boolean {
		return this.count < this.#max;
	}

	/** The share `session` counts in from now on (its creator's). */
	assign(session: Session, share: LiveShare | undefined): void {
		if (share) this.#shares.set(session, share);
	}

	#shareOf(session: Session): LiveShare | undefined {
		return this.#shares.get(session) ?? this.#host.shareOf?.(session);
	}

	#liveOf(owner: string, except?: Session): Session[] {
		return [...this.#host.sessions()].filter(
			(s) => s !== except && s.hasProcess && !s.isStopping && this.#shareOf(s)?.owner === owner,
		);
	}

	/**
	 * Makes room in `share` for one more live session (hibernating the owner's own least recently used
	 * idle one), or throws 429. Until `release` is called the start counts in the share, so starts at
	 * once cannot all pass the same check.
	 */
	async admit(share: LiveShare | undefined, starting?: Session): Promise<() => void> {
		if (!share || share.max === 0) return () => {};
		const { owner, max } = share;
		const own = this.#liveOf(owner, starting);
		if (own.length + (this.#admitted.get(owner) ?? 0) >= max) {
			const victim = own.filter((s) => s.canHibernate).sort((a, b) => a.lastActivityAt - b.lastActivityAt)[0];
			if (!victim)
				throw new GatewayError(
					429,
					"too_many_live_sessions",
					`${owner} already has ${own.length} sessions with a live pi process (at most ${max}, --max-live-sessions-per-principal) and none is idle enough to hibernate`,
				);
			await victim.stop("lru");
			const stopping = this.#host.stopping();
			if (stopping) throw stopping;
		}
		this.#admitted.set(owner, (this.#admitted.get(owner) ?? 0) + 1);
		let released = false;
		return () => {
			if (released) return;
			released = true;
			const left = (this.#admitted.get(owner) ?? 1) - 1;
			if (left > 0) this.#admitted.set(owner, left);
			else this.#admitted.delete(owner);
		};
	}

	/** Runs `start` (of `session`) within its principal's share and once there is room for one more process. */
	async within(start: () => Promise<void>, session?: Session): Promise<void> {
		const release = await this.admit(session && this.#shareOf(session), session);
		try {
			await this.#withinCap(start);
		} finally {
			release();
		}
	}

	/**
	 * Runs `start` (of `session`) within its principal's share only: for a pi that already counts
	 * against the whole cap (a warm pool's, handed to a session that wakes: pooled-wake.ts).
	 */
	async withinShare<T>(start: () => Promise<T>, session: Session): Promise<T> {
		const release = await this.admit(this.#shareOf(session), session);
		try {
			return await start();
		} finally {
			release();
		}
	}

	async #withinCap(start: () => Promise<void>): Promise<void> {
		// A pooled process gives its slot up before anyone's session is hibernated for it.
		const pool = this.#host.pool();
		if (this.count >= this.#max && pool) {
			this.#reserved++;
			try {
				await pool.shed();
			} finally {
				this.#reserved--;
			}
		}
		if (this.count >= this.#max) {
			const victim = this.#victim();
			if (!victim) {
				throw new GatewayError(
					429,
					"too_many_live_sessions",
					`All ${this.#max} pi processes are busy and none is idle enough to hibernate`,
				);
			}
			this.#reserved++;
			try {
				await victim.stop("lru");
			} finally {
				this.#reserved--;
			}
			const stopping = this.#host.stopping();
			if (stopping) throw stopping;
		}
		// Same tick as the reservation's release: the child counts as live before anyone else looks.
		await start();
	}

	/** An idle session of the principal holding the most live ones, its least recently used. */
	#victim(): Session | undefined {
		const held = new Map<string | undefined, number>();
		const live = [...this.#host.sessions()].filter((s) => s.hasProcess && !s.isStopping);
		for (const s of live) {
			const owner = this.#shareOf(s)?.owner;
			held.set(owner, (held.get(owner) ?? 0) + 1);
		}
		const holding = (s: Session) => held.get(this.#shareOf(s)?.owner) ?? 0;
		return live
			.filter((s) => s.canHibernate)
			.sort((a, b) => holding(b) - holding(a) || a.lastActivityAt - b.lastActivityAt)[0];
	}
}
