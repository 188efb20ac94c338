import type { Session } from "../session/index.ts";

/**
 * The registry's sessions in the order GET /v1/sessions pages them: oldest first, then by id (the
 * cursor's order). Kept as sessions come and go, so a page starts at its cursor and stops once it
 * is full, instead of sorting every session the node holds for each page (3.1× slower at 1,000
 * sessions than at 100, BENCHMARKS.md table 18). A session's createdAt is final once it is added.
 */
export class SessionOrder {
	readonly #items: Session[] = [];

	add(session: Session): void {
		this.#items.splice(this.#firstAfter(session.createdAt.getTime(), session.id, true), 0, session);
	}

	remove(session: Session): void {
		let i = this.#firstAfter(session.createdAt.getTime(), session.id, true);
		// Found by its key; by a search of all should its createdAt have changed after all.
		if (this.#items[i] !== session) i = this.#items.indexOf(session);
		if (i >= 0) this.#items.splice(i, 1);
	}

	/** The sessions after the position (all of them without one), in order. */
	*after(ms?: number, id?: string): Generator<Session> {
		const start = ms === undefined || id === undefined ? 0 : this.#firstAfter(ms, id, false);
		for (let i = start; i < this.#items.length; i++) yield this.#items[i] as Session;
	}

	/** The index of the first session at or past (ms, id) (`inclusive`), or strictly past it. */
	#firstAfter(ms: number, id: string, inclusive: boolean): number {
		let low = 0;
		let high = this.#items.length;
		while (low < high) {
			const mid = (low + high) >>> 1;
			const order = compare(this.#items[mid] as Session, ms, id);
			if (order < 0 || (!inclusive && order === 0)) low = mid + 1;
			else high = mid;
		}
		return low;
	}
}

function compare(session: Session, ms: number, id: string): number {
	const at = session.createdAt.getTime();
	if (at !== ms) return at < ms ? -1 : 1;
	return session.id === id ? 0 : session.id < id ? -1 : 1;
}
