import { GatewayError } from "../errors.ts";
import type { Session } from "./session.ts";
import type { WarmPools } from "./warm-pool.ts";

/** What the cap counts and may stop: the registry's sessions and its warm pool. */
export interface LiveCapHost {
	sessions(): Iterable<Session>;
	pool(): WarmPools | undefined;
	/** Thrown when the gateway began to stop while a start waited for its victim. */
	stopping(): Error | undefined;
}

/**
 * --max-live-sessions: how many pi processes may run at once. Past it a start first takes a warm
 * pool process's slot, then hibernates the least recently used idle session, and is refused
 * (429) when none is idle enough.
 */
export class LiveCap {
	readonly #max: number;
	readonly #host: LiveCapHost;
	/** Process slots promised to a start that waits for its victim to exit. */
	#reserved = 0;

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

	/** Runs `start` once there is room for one more process. */
	async within(start: () => Promise<void>): Promise<void> {
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
			const victim = [...this.#host.sessions()]
				.filter((s) => s.canHibernate)
				.sort((a, b) => a.lastActivityAt - b.lastActivityAt)[0];
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
}
