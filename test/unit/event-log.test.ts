import { describe, expect, it } from "vitest";
import { EventLog, eventJson, eventText, type LoggedEvent } from "../../src/sessions/events/event-log.ts";

const fill = (log: EventLog, n: number, data = (i: number) => `{"i":${i}}`) => {
	for (let i = 1; i <= n; i++) log.append("e", data(i));
};
const seqs = (events: LoggedEvent[]) => events.map((e) => e.seq);

describe("EventLog", () => {
	it("numbers events from 1 and replays everything after a position", () => {
		const log = new EventLog(100, 1 << 20);
		expect(log.lastSeq).toBe(0);
		expect(log.firstSeq).toBe(1);
		expect(log.since(0)).toEqual({ events: [] });
		fill(log, 5);
		expect(log.lastSeq).toBe(5);
		expect(log.firstSeq).toBe(1);
		expect(seqs(log.since(0).events)).toEqual([1, 2, 3, 4, 5]);
		expect(seqs(log.since(3).events)).toEqual([4, 5]);
		expect(log.since(5)).toEqual({ events: [] });
		expect(log.since(3).events[0]).toEqual({ seq: 4, type: "e", data: Buffer.from('{"i":4}') });
	});

	it("a position past the end replays nothing and reports no gap", () => {
		const log = new EventLog(100, 1 << 20);
		fill(log, 3);
		expect(log.since(10)).toEqual({ events: [] });
	});

	it("limits a replay batch", () => {
		const log = new EventLog(100, 1 << 20);
		fill(log, 10);
		expect(seqs(log.since(2, 3).events)).toEqual([3, 4, 5]);
		expect(seqs(log.since(8, 3).events)).toEqual([9, 10]);
	});

	it("drops the oldest events past its count and reports exactly what a late reader lost", () => {
		const log = new EventLog(4, 1 << 20);
		fill(log, 10);
		expect(log.size).toBe(4);
		expect(log.firstSeq).toBe(7);
		expect(log.since(2)).toEqual({
			events: log.since(6).events,
			gap: { after: 2, firstAvailable: 7, lost: 4 },
		});
		expect(seqs(log.since(0).events)).toEqual([7, 8, 9, 10]);
		expect(log.since(0).gap).toEqual({ after: 0, firstAvailable: 7, lost: 6 });
		// Just old enough: the next event is the first one held, so nothing is lost.
		expect(log.since(6).gap).toBeUndefined();
	});

	it("drops the oldest events past its size, but always keeps the newest", () => {
		const log = new EventLog(100, 20);
		log.append("e", "0123456789"); // 10
		log.append("e", "0123456789"); // 20: at the bound
		expect(log.size).toBe(2);
		log.append("e", "x"); // 21 → the first goes
		expect(seqs(log.since(0).events)).toEqual([2, 3]);
		expect(log.bytes).toBe(11);
		log.append("e", "y".repeat(50)); // bigger than the bound on its own
		expect(seqs(log.since(0).events)).toEqual([4]);
		expect(log.bytes).toBe(50);
	});

	it("holds data as bytes and counts them: pi's line copied out of the pipe's read, text as UTF-8", () => {
		const log = new EventLog(100, 1 << 20);
		log.append("e", "\u2028😀中");
		expect(log.bytes).toBe(10);
		const line = Buffer.from('{"type":"x"}');
		const kept = log.append("x", line).data;
		expect(kept).toEqual(line);
		// A copy in the log's slab: the read it came in is not kept alive by the log.
		expect(kept.buffer).not.toBe(line.buffer);
		expect(log.bytes).toBe(10 + line.length);
		expect(eventText(log.since(0).events[0] as LoggedEvent)).toBe("\u2028😀中");
		expect(eventJson(log.since(1).events[0] as LoggedEvent)).toEqual({ type: "x" });
	});

	it("stays correct across the compaction of its backing array", () => {
		const log = new EventLog(100, 1 << 30);
		fill(log, 5000);
		expect(log.size).toBe(100);
		expect(log.firstSeq).toBe(4901);
		expect(seqs(log.since(4950).events)).toEqual(Array.from({ length: 50 }, (_, i) => 4951 + i));
		expect(log.since(4950).events[0]?.data.toString()).toBe('{"i":4951}');
		expect(log.since(4000).gap).toEqual({ after: 4000, firstAvailable: 4901, lost: 900 });
	});

	it("tells every listener every append, synchronously and in order, until it unsubscribes", () => {
		const log = new EventLog(100, 1 << 20);
		const a: number[] = [];
		const b: number[] = [];
		const offA = log.subscribe((e) => a.push(e.seq));
		log.subscribe((e) => b.push(e.seq));
		expect(log.listenerCount).toBe(2);
		fill(log, 3);
		expect(a).toEqual([1, 2, 3]);
		offA();
		expect(log.listenerCount).toBe(1);
		fill(log, 2);
		expect(a).toEqual([1, 2, 3]);
		expect(b).toEqual([1, 2, 3, 4, 5]);
	});

	it("a listener that throws is removed; the others still get the event", () => {
		const log = new EventLog(100, 1 << 20);
		const seen: number[] = [];
		const warnings: Error[] = [];
		const onWarning = (w: Error) => warnings.push(w);
		process.on("warning", onWarning);
		log.subscribe(() => {
			throw new Error("broken listener");
		});
		log.subscribe((e) => seen.push(e.seq));
		fill(log, 2);
		expect(seen).toEqual([1, 2]);
		expect(log.listenerCount).toBe(1);
		return new Promise<void>((resolve) =>
			setImmediate(() => {
				process.off("warning", onWarning);
				expect(warnings.map((w) => w.message)).toEqual(["broken listener"]);
				resolve();
			}),
		);
	});
});
