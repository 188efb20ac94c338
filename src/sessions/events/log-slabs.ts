import { giveSlab, takeSlab } from "../../shared/slabs.ts";

/**
 * One frame of a session's event stream: `data` is pi's line as the bytes pi printed (never
 * decoded unless someone reads it: see eventText/eventJson), or a gateway event's JSON as UTF-8.
 */
export interface LoggedEvent {
	seq: number;
	type: string;
	data: Buffer;
	/**
	 * The log's slab that holds `data` (log-slabs.ts): its bytes are used again once the event
	 * has left the log, so whoever reads `data` later than the append must pin it (outboxes do).
	 */
	slab?: Slab | undefined;
}

// Where an event log keeps its events' bytes: copied out of pi's pipe reads into slabs that are
// used again once every event in them has left the log and no outbox still has one queued. Kept
// as views of the reads, the reads outlived two scavenges, were promoted, and only mark-compacts
// freed them, which V8 starts as external memory grows: 5–6 per 200,000-event 2 KB flood, each
// marking the whole heap (BENCHMARKS.md, fourth pass). Reused slabs make no new external memory.

/** A log's first slab, its own: an idle session holds no more than this (a busy one soon fills it). */
const firstSlabBytes = 16 * 1024;
/** Larger events keep the buffer they came in (rare: a slab would hold only a few of them). */
export const maxSlabbedBytes = 32 * 1024;

export class Slab {
	readonly #bytes: Buffer;
	#used = 0;
	/** Events of this slab still in their log. */
	#live = 0;
	/** Queued in outboxes and not yet copied into a batch: their bytes must stay. */
	#pins = 0;
	/** Full: no more events go in. */
	#retired = false;
	#freed = false;

	/** `first`: a log's first slab, small and never pooled. */
	constructor(first = false) {
		this.#bytes = first ? Buffer.allocUnsafe(firstSlabBytes) : Buffer.from(takeSlab());
	}

	fits(bytes: number): boolean {
		return this.#used + bytes <= this.#bytes.length;
	}

	/** A copy of `data` in this slab, counted as one event in the log. */
	add(data: Buffer): Buffer {
		data.copy(this.#bytes, this.#used);
		const view = this.#bytes.subarray(this.#used, this.#used + data.length);
		this.#used += data.length;
		this.#live++;
		return view;
	}

	retire(): void {
		this.#retired = true;
		this.#release();
	}

	/** One of its events fell off the log. */
	evicted(): void {
		this.#live--;
		this.#release();
	}

	pin(): void {
		this.#pins++;
	}

	unpin(): void {
		this.#pins--;
		this.#release();
	}

	/** Its bytes go to the next slab once nothing can read them any more, exactly once. */
	#release(): void {
		if (this.#freed || !this.#retired || this.#live > 0 || this.#pins > 0) return;
		this.#freed = true;
		giveSlab(this.#bytes.buffer);
	}
}

/** An outbox queued `event` (read later, when its batch is made). */
export function pinEvent(event: LoggedEvent): void {
	event.slab?.pin();
}

/** The outbox copied `event` into a batch, or will never read it. */
export function unpinEvent(event: LoggedEvent): void {
	event.slab?.unpin();
}
