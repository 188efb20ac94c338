import { describe, expect, it } from "vitest";
import { followSession } from "../../src/http/streams/follow.ts";
import { Outbox, type Sink } from "../../src/http/streams/sse.ts";
import { EventLog } from "../../src/sessions/events/event-log.ts";
import type { Session } from "../../src/sessions/session/session.ts";
import { parseText } from "../helpers/sse.ts";

/** The part of a Session that followSession reads. */
function fakeSession(maxEvents = 10_000) {
	return { id: "ses_t", events: new EventLog(maxEvents, 1 << 30), isAlive: true };
}
const asSession = (s: ReturnType<typeof fakeSession>) => s as unknown as Session;

class HeldSink implements Sink {
	aborted = false;
	text = "";
	held = true;
	#waiting: (() => void)[] = [];
	write(text: string): Promise<void> {
		this.text += text;
		return this.held ? new Promise((r) => this.#waiting.push(r)) : Promise.resolve();
	}
	release(): void {
		this.held = false;
		for (const r of this.#waiting.splice(0)) r();
	}
}

/** Two turns of the event loop: the pump sends at the end of the turn that woke it. */
const tick = () => new Promise((r) => setImmediate(() => setImmediate(r)));
/** The ids of the frames written, read by the client's parser. */
const ids = (text: string) =>
	parseText(text)
		.filter((f) => f.id !== undefined)
		.map((f) => Number(f.id));
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe("followSession", () => {
	it("replays, then goes live, with every event exactly once even when appends race the replay", async () => {
		const session = fakeSession();
		for (let i = 0; i < 1000; i++) session.events.append("e", `{"i":${i}}`);
		const out = new Outbox(1 << 20);
		const sink = new HeldSink();
		const detach = followSession(asSession(session), out, { after: 10 });
		expect(session.events.followers).toBe(1);
		const done = out.pump(sink);
		await tick(); // the first replay batch is on the (held) socket
		for (let i = 0; i < 10; i++) session.events.append("e", "{}");
		sink.release();
		await tick();
		for (let i = 0; i < 5; i++) session.events.append("e", "{}");
		await tick();
		expect(ids(sink.text)).toEqual(range(11, 1015));
		detach();
		detach(); // released once: the count never goes below what is open
		expect(session.events.followers).toBe(0);
		expect(session.events.listenerCount).toBe(0);
		out.end();
		await done;
	});

	it("a position older than the log gets a gap frame, then the rest", async () => {
		const session = fakeSession(50);
		for (let i = 0; i < 120; i++) session.events.append("e", "{}");
		const out = new Outbox(1 << 20);
		const sink = new HeldSink();
		sink.release();
		followSession(asSession(session), out, { after: 3 });
		const done = out.pump(sink);
		await tick();
		const first =
			'id: 70\nevent: gap\ndata: {"type":"gap","sessionId":"ses_t","after":3,"firstAvailable":71,"lost":67}\n\n';
		expect(sink.text.slice(0, first.length)).toBe(first);
		expect(ids(sink.text)).toEqual([70, ...range(71, 120)]);
		out.end();
		await done;
	});

	it("filters by type but always sends session_exit, and ends after it", async () => {
		const session = fakeSession();
		const out = new Outbox(1 << 20);
		const sink = new HeldSink();
		sink.release();
		followSession(asSession(session), out, { after: 0, accept: (e) => e.type === "keep" });
		const done = out.pump(sink);
		session.events.append("keep", "{}");
		session.events.append("skip", "{}");
		session.events.append("keep", "{}");
		session.isAlive = false;
		session.events.append("session_exit", "{}");
		session.events.append("keep", "{}"); // never reaches a stream that has ended
		await done;
		expect(ids(sink.text)).toEqual([1, 3, 4]);
		expect(sink.text).toContain("event: session_exit");
		expect(session.events.followers).toBe(0);
	});

	it("ends after `until`, whether the event comes from the replay or live", async () => {
		for (const live of [false, true]) {
			const session = fakeSession();
			if (!live) for (const t of ["a", "stop", "b"]) session.events.append(t, "{}");
			const out = new Outbox(1 << 20);
			const sink = new HeldSink();
			sink.release();
			followSession(asSession(session), out, { after: 0, until: (e) => e.type === "stop" });
			const done = out.pump(sink);
			if (live) for (const t of ["a", "stop", "b"]) session.events.append(t, "{}");
			await done;
			expect(ids(sink.text)).toEqual([1, 2]);
			expect(session.events.listenerCount).toBe(0);
		}
	});

	it("a session that has already exited ends the stream after its log", async () => {
		const session = fakeSession();
		session.events.append("e", "{}");
		session.isAlive = false;
		const out = new Outbox(1 << 20);
		const sink = new HeldSink();
		sink.release();
		followSession(asSession(session), out, { after: 1 });
		await out.pump(sink);
		expect(sink.text).toBe("");
		expect(session.events.followers).toBe(0);
	});
});
