import { describe, expect, it } from "vitest";
import { Outbox, type Sink } from "../../src/http/streams/sse.ts";
import { frameBytes } from "../../src/http/streams/sse-frames.ts";
import { EventLog, type LoggedEvent } from "../../src/sessions/events/event-log.ts";
import { maxSlabbedBytes } from "../../src/sessions/events/log-slabs.ts";

/** A pi line of `size` bytes whose content names its number, so a reused slab shows as a wrong line. */
const line = (n: number, size = 1000) => {
	const head = `{"type":"message_update","n":${n},"pad":"`;
	return Buffer.from(`${head}${"x".repeat(size - head.length - 2)}"}`);
};

class CollectingSink implements Sink {
	aborted = false;
	readonly recycles = false;
	text = "";
	write(chunk: string | Uint8Array): Promise<void> {
		this.text += typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8");
		return Promise.resolve();
	}
}

/** The buffer of the next shared slab any log takes (a fresh log's first slab is its own). */
function nextSharedSlab(): ArrayBufferLike {
	const log = new EventLog(100, 1 << 30);
	for (let n = 1; n <= 16; n++) log.append("message_update", line(n));
	return log.append("message_update", line(17)).data.buffer;
}

/** Every event still in the log holds the line it was given. */
function expectIntact(log: EventLog, from: number) {
	for (const event of log.since(0).events) expect(event.data.equals(line(from + event.seq))).toBe(true);
}

describe("the event log's slabs", () => {
	it("use a slab's bytes again once its events have left the log, and keep every live event intact", () => {
		const log = new EventLog(200, 1 << 30);
		const early: ArrayBufferLike[] = [];
		for (let n = 1; n <= 300; n++) early.push(log.append("message_update", line(n)).data.buffer);
		// 300 events of 1,000 bytes filled three slabs; the first two are out of the log by now.
		const later = new Set<ArrayBufferLike>();
		for (let n = 301; n <= 1200; n++) later.add(log.append("message_update", line(n)).data.buffer);
		expect(early.slice(0, 100).some((b) => later.has(b))).toBe(true);
		expectIntact(log, 0);
	});

	it("keep an event's bytes while an outbox has it queued, long after it left the log", async () => {
		const log = new EventLog(50, 1 << 30);
		const out = new Outbox(1 << 30);
		// Past the log's first slab (16 KiB, its own): the queued event is in a slab the logs share.
		for (let n = 1; n <= 20; n++) log.append("message_update", line(n));
		const queued = log.append("message_update", line(21));
		out.push(frameBytes(queued), queued.seq);
		const others: LoggedEvent[] = [];
		for (let n = 22; n <= 2000; n++) others.push(log.append("message_update", line(n)));
		// Gone from the log, its slab retired, and ~2,000 events written since: its bytes are still its own.
		expect(log.firstSeq).toBeGreaterThan(21);
		// (Its slab holds ~131 of these lines; none written after it filled went into it.)
		expect(others.filter((e) => e.seq > 200).some((e) => e.data.buffer === queued.data.buffer)).toBe(false);
		expect(queued.data.equals(line(21))).toBe(true);
		out.end();
		const sink = new CollectingSink();
		await out.pump(sink);
		expect(sink.text).toBe(`id: 21\nevent: message_update\ndata: ${line(21).toString()}\n\n`);
		// Copied into the batch: from now on the slab may serve later events (the next shared slab, of any log).
		expect(nextSharedSlab()).toBe(queued.data.buffer);
		expectIntact(log, 0);
	});

	it("are let go by an outbox that drops its queue (a slow reader) or whose client has gone", async () => {
		const log = new EventLog(10, 1 << 30);
		for (let n = 1; n <= 20; n++) log.append("message_update", line(n));
		const dropped = new Outbox(5000);
		const aborted = new Outbox(1 << 30);
		const queued = log.append("message_update", line(21));
		dropped.push(frameBytes(queued), queued.seq);
		aborted.push(frameBytes(queued), queued.seq);
		for (let n = 22; n <= 30; n++) dropped.push(frameBytes(log.append("message_update", line(n))), n);
		expect(dropped.dropped).toBe(true);
		const gone = new CollectingSink();
		gone.aborted = true;
		await aborted.pump(gone);
		// Its slab fills and its events leave the log; nothing holds it: the next shared slab is it.
		for (let n = 31; n <= 160; n++) log.append("message_update", line(n));
		const reused = new Set<ArrayBufferLike>();
		for (let n = 161; n <= 600; n++) reused.add(log.append("message_update", line(n)).data.buffer);
		expect(reused.has(queued.data.buffer)).toBe(true);
		expectIntact(log, 0);
	});

	it("never give away the slab a log is still filling, though all its events have left the log", () => {
		const a = new EventLog(2, 1 << 30);
		// 16 lines fill a's own first slab; the 17th starts a shared one.
		for (let n = 1; n <= 17; n++) a.append("message_update", line(n));
		// Gateway events are text, not slabbed: these two push the only line of that slab out of a's log.
		a.append("session_status", "{}");
		a.append("session_status", "{}");
		const b = new EventLog(1000, 1 << 30);
		for (let n = 1; n <= 17; n++) b.append("message_update", line(100_000 + n));
		const ours = a.append("message_update", line(18));
		const theirs = b.append("message_update", line(100_018));
		expect(ours.data.equals(line(18))).toBe(true);
		expect(theirs.data.equals(line(100_018))).toBe(true);
		expect(theirs.data.buffer).not.toBe(ours.data.buffer);
	});

	it("leave a line over 32 KiB in the buffer it came in", () => {
		const log = new EventLog(10, 1 << 30);
		const big = line(1, maxSlabbedBytes + 1);
		expect(log.append("message_update", big).data).toBe(big);
	});
});
