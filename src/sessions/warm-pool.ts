import type { Logger } from "pino";
import type { Session } from "./session.ts";

/**
 * Keeps `size` pi processes started with the default options, so a session that asks for
 * nothing special skips pi's ~0.3 s start. Taking one refills the pool in the background;
 * a pooled process that dies is replaced. Pooled processes count against the session limit.
 */
export class WarmPool {
	readonly #size: number;
	readonly #create: () => Promise<Session>;
	readonly #logger: Logger;
	readonly #ready: Session[] = [];
	readonly #starting = new Set<Promise<unknown>>();
	#closed = false;

	constructor(size: number, create: () => Promise<Session>, logger: Logger) {
		this.#size = size;
		this.#create = create;
		this.#logger = logger;
	}

	/** Processes held: ready ones and those still starting. */
	get size(): number {
		return this.#ready.length + this.#starting.size;
	}

	get readyCount(): number {
		return this.#ready.length;
	}

	get readyPids(): number[] {
		return this.#ready.map((s) => s.pid).filter((pid): pid is number => pid !== undefined);
	}

	/** A ready session, or undefined (the caller starts one cold). */
	take(): Session | undefined {
		let session = this.#ready.shift();
		while (session && !(session.isAlive && session.hasProcess)) session = this.#ready.shift();
		// The registry's own listener takes over (or none): the pool no longer watches it.
		session?.onStatusChange(() => {});
		// Spawning blocks the event loop for a few ms: refill after this session's answer is out.
		setTimeout(() => this.fill(), 25).unref();
		return session;
	}

	fill(): void {
		while (!this.#closed && this.size < this.#size) {
			const starting: Promise<unknown> = this.#create()
				.then((session) => {
					if (this.#closed) return session.stop("shutdown");
					this.#ready.push(session);
					session.onStatusChange(() => {
						if (!session.isAlive || !session.hasProcess) this.#drop(session);
					});
				})
				// A failing pi is not retried here: the next take() tries again.
				.catch((error) => this.#logger.warn({ err: error }, "warm pool: pi failed to start"))
				.finally(() => this.#starting.delete(starting));
			this.#starting.add(starting);
		}
	}

	/** Stops the pooled processes, waiting for those still starting. */
	async close(): Promise<void> {
		this.#closed = true;
		await Promise.all([...this.#starting]);
		await Promise.all(this.#ready.splice(0).map((s) => s.stop("shutdown")));
	}

	/** Last resort on process exit. */
	killAll(): void {
		for (const session of this.#ready) session.kill("SIGKILL", true);
	}

	#drop(session: Session): void {
		const at = this.#ready.indexOf(session);
		if (at === -1) return;
		this.#ready.splice(at, 1);
		this.fill();
	}
}
