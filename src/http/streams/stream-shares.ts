/**
 * Open streams counted per holder (DESIGN, "Fair shares"): a cap shared by principals — the
 * all-sessions stream's --max-event-streams, a shared session's --max-subscribers — gives each
 * principal a quarter of it, so one principal cannot take every slot and lock the others out.
 */
export class StreamShares {
	readonly #held = new Map<string, number>();

	/** A principal's share of a cap of `max`: a quarter, at least one. */
	static shareOf(max: number): number {
		return Math.max(1, Math.floor(max / 4));
	}

	held(key: string): number {
		return this.#held.get(key) ?? 0;
	}

	/** One more for `key`; the function gives it back (once, however often it is called). */
	take(key: string): () => void {
		this.#held.set(key, this.held(key) + 1);
		let released = false;
		return () => {
			if (released) return;
			released = true;
			const left = this.held(key) - 1;
			if (left > 0) this.#held.set(key, left);
			else this.#held.delete(key);
		};
	}
}
