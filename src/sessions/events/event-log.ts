import { type LoggedEvent, maxSlabbedBytes, Slab } from "./log-slabs.ts";

export type { LoggedEvent };

/** The event's data as text: for the few records the gateway reads, not for forwarding. */
export function eventText(event: LoggedEvent): string {
	return event.data.toString("utf8");
}

/** The event's data parsed (throws on a line that is no JSON, as JSON.parse does). */
export function eventJson<T = unknown>(event: LoggedEvent): T {
	return JSON.parse(eventText(event)) as T;
}

export type Listener = (event: LoggedEvent) => void;

export interface Gap {
	/** The position the reader asked to resume after. */
	after: number;
	/** The oldest sequence number still in the log. */
	firstAvailable: number;
	/**
	 * How many events between the two are gone; absent when that cannot be known (the range spans
	 * the numbers skipped after an unclean stop, where the dead process's last events were never written).
	 */
	lost?: number;
}

export interface Replay {
	events: LoggedEvent[];
	/** Set when the asked-for position is older than the log: what was lost and where the log starts. */
	gap?: Gap;
}

/**
 * A bounded, append-only log with live listeners. Sequence numbers start at 1 and never repeat;
 * the oldest events fall off when the log passes its count or size bound (sizes are the bytes of
 * the events' data). Appending never waits for a
 * listener: each listener buffers on its own.
 */
export class EventLog {
	readonly #maxEvents: number;
	readonly #maxBytes: number;
	#events: LoggedEvent[] = [];
	#head = 0;
	#bytes = 0;
	#lastSeq = 0;
	readonly #listeners = new Set<Listener>();
	/** Listeners that are a client's stream (follow): what a session's subscriber cap counts. */
	#followers = 0;
	/** Where the next events' bytes go. */
	#slab: Slab | undefined;
	/** A gap from a position before this one cannot be counted (0: every gap can). */
	readonly #uncountedBefore: number;

	/**
	 * `startSeq`: the last seq of an earlier log this one continues (a session restored after a
	 * restart); `counted` false when the numbers up to it are not all accounted for (they skipped a
	 * margin after an unclean stop): a gap from before it then has no `lost`.
	 */
	constructor(maxEvents: number, maxBytes: number, startSeq = 0, counted = true) {
		this.#maxEvents = maxEvents;
		this.#maxBytes = maxBytes;
		this.#lastSeq = startSeq;
		this.#uncountedBefore = counted ? 0 : startSeq;
	}

	get lastSeq(): number {
		return this.#lastSeq;
	}

	/** The oldest sequence number still held (lastSeq + 1 while the log is empty). */
	get firstSeq(): number {
		return this.#events[this.#head]?.seq ?? this.#lastSeq + 1;
	}

	get size(): number {
		return this.#events.length - this.#head;
	}

	get bytes(): number {
		return this.#bytes;
	}

	get listenerCount(): number {
		return this.#listeners.size;
	}

	/** Open streams on this log (follow): the session's SSE subscribers. */
	get followers(): number {
		return this.#followers;
	}

	/** `data`: pi's line as read (copied into the log's slab), or text (a gateway event's JSON), stored as UTF-8. */
	append(type: string, data: Buffer | string): LoggedEvent {
		const event: LoggedEvent = { seq: ++this.#lastSeq, type, data: empty, slab: undefined };
		if (typeof data === "string") event.data = Buffer.from(data);
		else if (data.length > maxSlabbedBytes) event.data = data;
		else {
			let slab = this.#slab;
			if (slab === undefined || !slab.fits(data.length)) {
				slab?.retire();
				slab = this.#slab = new Slab(slab === undefined);
			}
			event.data = slab.add(data);
			event.slab = slab;
		}
		this.#events.push(event);
		this.#bytes += event.data.length;
		this.#evict();
		for (const listener of this.#listeners) {
			try {
				listener(event);
			} catch (error) {
				// A broken listener must not cost the others (or pi's reader) this event: it goes, they stay.
				this.#listeners.delete(listener);
				process.emitWarning(error as Error);
			}
		}
		return event;
	}

	/**
	 * Events after `after`, at most `limit` of them, and a gap when events after it have fallen
	 * off already. Cost is proportional to what is returned, not to the size of the log.
	 */
	since(after: number, limit = Number.POSITIVE_INFINITY): Replay {
		const first = this.firstSeq;
		const from = Math.max(after + 1, first);
		const start = this.#head + (from - first);
		const events = this.#events.slice(start, start + Math.min(limit, this.#events.length));
		if (after + 1 >= first) return { events };
		if (after < this.#uncountedBefore) return { events, gap: { after, firstAvailable: first } };
		return { events, gap: { after, firstAvailable: first, lost: first - after - 1 } };
	}

	/** Listeners see every append from now on, synchronously and in order. */
	subscribe(listener: Listener): () => void {
		this.#listeners.add(listener);
		return () => this.#listeners.delete(listener);
	}

	/**
	 * A client's stream subscribes: it counts among the followers until released. The release is
	 * idempotent, so the count never goes below what is open.
	 */
	follow(listener: Listener): () => void {
		const unsubscribe = this.subscribe(listener);
		this.#followers++;
		let held = true;
		return () => {
			if (!held) return;
			held = false;
			unsubscribe();
			this.#followers--;
		};
	}

	#evict(): void {
		while (this.size > this.#maxEvents || (this.#bytes > this.#maxBytes && this.size > 1)) {
			const old = this.#events[this.#head++] as LoggedEvent;
			this.#bytes -= old.data.length;
			old.slab?.evicted();
		}
		// Compact the array once the dead prefix dominates, so eviction stays O(1) amortised.
		if (this.#head > 1024 && this.#head * 2 > this.#events.length) {
			this.#events = this.#events.slice(this.#head);
			this.#head = 0;
		}
	}
}

const empty = Buffer.alloc(0);
