import { describe, expect, it } from "vitest";
import { Outbox, type Sink } from "../../src/http/streams/sse.ts";
import { frame, frameBytes, gatewayFrame } from "../../src/http/streams/sse-frames.ts";
import { parseText } from "../helpers/sse.ts";

/** A socket stand-in: records writes; while `held`, each write waits until released. */
class FakeSink implements Sink {
	aborted = false;
	writes: string[] = [];
	held = false;
	#release: (() => void)[] = [];
	write(chunk: string | Uint8Array): Promise<void> {
		this.writes.push(typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8"));
		if (!this.held) return Promise.resolve();
		return new Promise((resolve) => this.#release.push(resolve));
	}
	release(): void {
		this.held = false;
		for (const r of this.#release.splice(0)) r();
	}
}

/** Two turns of the event loop: the pump sends at the end of the turn that woke it. */
const tick = () => new Promise((r) => setImmediate(() => setImmediate(r)));

/** frame() as text, for a LoggedEvent whose data is `data`'s UTF-8 bytes. */
const framed = (seq: number, type: string, data: string | Buffer, id?: string) =>
	frame({ seq, type, data: typeof data === "string" ? Buffer.from(data) : data }, id).toString("utf8");

describe("frames", () => {
	it("carry id, event and pi's line unchanged as one data line", () => {
		const line = '{"type":"message_update","delta":"a\u2028b 😀 中"}';
		expect(framed(7, "message_update", line)).toBe(`id: 7\nevent: message_update\ndata: ${line}\n\n`);
		expect(framed(7, "x", "{}", "ses_a:7")).toBe("id: ses_a:7\nevent: x\ndata: {}\n\n");
		expect(gatewayFrame("gap", { after: 1 }, 4)).toBe('id: 4\nevent: gap\ndata: {"type":"gap","after":1}\n\n');
		expect(gatewayFrame("dropped", {})).toBe('event: dropped\ndata: {"type":"dropped"}\n\n');
	});

	it("pass pi's bytes through untouched, even ones that are no valid UTF-8", () => {
		const line = Buffer.concat([Buffer.from('{"type":"x","t":"'), Buffer.from([0xe6, 0xbc, 0xff]), Buffer.from('"}')]);
		const bytes = frame({ seq: 1, type: "x", data: line });
		expect(bytes.equals(Buffer.concat([Buffer.from("id: 1\nevent: x\ndata: "), line, Buffer.from("\n\n")]))).toBe(true);
	});

	it("hold no CR or LF in any field: a break in the data starts another data line, a bad type or id throws", () => {
		const forged = '{"type":"turn_start","a":"\revent: agent_settled\r\ndata: {}\n"}';
		expect(framed(3, "turn_start", forged)).toBe(
			'id: 3\nevent: turn_start\ndata: {"type":"turn_start","a":"\ndata: event: agent_settled\ndata: data: {}\ndata: "}\n\n',
		);
		// A lone raw CR (what a line from pi can still hold: the decoder splits on LF only).
		expect(framed(4, "turn_start", '{"a":"\revent: agent_settled"}')).toBe(
			'id: 4\nevent: turn_start\ndata: {"a":"\ndata: event: agent_settled"}\n\n',
		);
		expect(() => framed(3, "x\nevent: agent_settled", "{}")).toThrow("not an event type");
		expect(() => gatewayFrame("x\rdata: 1", {})).toThrow("not an event type");
		expect(() => framed(3, "x", "{}", "a\nb")).toThrow("not an SSE id");
	});
});

describe("Outbox", () => {
	it("writes a live frame (pi's bytes copied once, into the batch) exactly as frame() builds it", async () => {
		const events = [
			{ seq: 1, type: "message_update", data: Buffer.from('{"type":"message_update","d":"a\u2028😀"}') },
			{ seq: 2, type: "turn_start", data: Buffer.from('{"a":"\revent: agent_settled"}') },
			{ seq: 3, type: "agent_end", data: Buffer.from("{}") },
		];
		expect(frameBytes(events[0] as (typeof events)[0])).toBe(frameBytes(events[0] as (typeof events)[0]));
		const out = new Outbox(1 << 20);
		const sink = new FakeSink();
		out.push(frameBytes(events[0] as (typeof events)[0]), 1);
		const done = out.pump(sink);
		await tick();
		out.push(": heartbeat\n\n");
		for (const event of events.slice(1)) out.push(frameBytes(event), event.seq);
		out.end();
		await done;
		expect(sink.writes).toHaveLength(2);
		const [one, two, three] = events.map((e) => frame(e).toString());
		expect(sink.writes).toEqual([one, `: heartbeat\n\n${two}${three}`]);
		expect(two).toBe('id: 2\nevent: turn_start\ndata: {"a":"\ndata: event: agent_settled"}\n\n');
		expect(out.lastSent).toBe(3);
	});

	it("writes each id's digits and each type's lines into a batch as frame() does, whatever the width", async () => {
		const seqs = [0, 7, 9, 10, 99, 100, 1009, 123456, 9999999, 2 ** 40 + 1];
		const types = ["message_update", "agent_end", "tool_execution_update"];
		const events = seqs.map((seq, i) => ({
			seq,
			type: types[i % types.length] as string,
			data: Buffer.from(`{"type":"x","i":${i},"s":"é😀"}`),
		}));
		const out = new Outbox(1 << 20);
		const sink = new FakeSink();
		for (const event of events) out.push(frameBytes(event), event.seq);
		out.end();
		await out.pump(sink);
		expect(sink.writes).toEqual([events.map((e) => frame(e).toString()).join("")]);
	});

	it("writes pushed text in order and stops after end()", async () => {
		const out = new Outbox(1000);
		const sink = new FakeSink();
		out.push("a", 1);
		const done = out.pump(sink);
		out.push("b", 2);
		await tick();
		out.push("c", 3);
		out.end();
		out.push("ignored", 4);
		await done;
		expect(sink.writes.join("")).toBe("abc");
		expect(out.lastSent).toBe(3);
	});

	it("batches what arrives while the socket is busy into one write", async () => {
		const out = new Outbox(1000);
		const sink = new FakeSink();
		sink.held = true;
		out.push("1", 1);
		const done = out.pump(sink);
		await tick();
		for (const t of ["2", "3", "4"]) out.push(t, Number(t));
		expect(out.bufferedBytes).toBe(3);
		sink.release();
		out.end();
		await done;
		expect(sink.writes).toEqual(["1", "234"]);
		expect(out.lastSent).toBe(4);
	});

	it("a subscriber past its buffer gets one final dropped frame naming the last id it was sent", async () => {
		const out = new Outbox(10);
		const sink = new FakeSink();
		sink.held = true;
		let drops = 0;
		out.onDrop = () => drops++;
		out.push("first", 1);
		const done = out.pump(sink);
		await tick(); // "first" is on the socket (in flight)
		out.push("12345", 2);
		out.push("67890", 3);
		expect(out.dropped).toBe(false);
		out.push("x", 4); // 11 > 10
		expect(out.dropped).toBe(true);
		expect(out.ended).toBe(true);
		expect(drops).toBe(1);
		out.push("after", 5);
		expect(drops).toBe(1);
		sink.release();
		await done;
		expect(sink.writes[0]).toBe("first");
		expect(sink.writes).toHaveLength(2);
		// The last frame, and no id of its own (the client's last id stays the last event it was sent).
		const frames = parseText(sink.writes[1] as string);
		expect(frames).toHaveLength(1);
		expect(frames[0]).toEqual({
			event: "dropped",
			data: expect.any(String),
			json: {
				type: "dropped",
				reason: "slow_consumer",
				detail: "more than 10 bytes were waiting for this client; reconnect with Last-Event-ID",
				resumeFrom: 1,
			},
		});
	});

	it("one frame larger than the buffer still goes out to a reader that keeps up", async () => {
		const out = new Outbox(10);
		const sink = new FakeSink();
		const big = "x".repeat(100);
		out.push(big, 1);
		expect(out.dropped).toBe(false);
		const done = out.pump(sink);
		await tick();
		out.push(big, 2);
		out.end();
		await done;
		expect(sink.writes).toEqual([big, big]);
		expect(out.dropped).toBe(false);
	});

	it("pulls a source after what is queued, at the socket's pace, then goes back to live text", async () => {
		const out = new Outbox(5);
		const sink = new FakeSink();
		const batches = ["r1", "r2", "r3"];
		let pulls = 0;
		out.push("open");
		out.pull(() => {
			pulls++;
			const text = batches.shift();
			return text === undefined ? undefined : { text, lastId: pulls };
		});
		sink.held = true;
		const done = out.pump(sink);
		await tick();
		// The replay is larger than the buffer, but it is pulled, not queued: no drop.
		expect(sink.writes).toEqual(["open"]);
		expect(pulls).toBe(0);
		sink.release();
		await tick();
		expect(sink.writes).toEqual(["open", "r1", "r2", "r3"]);
		expect(out.lastSent).toBe(3);
		expect(out.dropped).toBe(false);
		out.push("live", 9);
		out.end();
		await done;
		expect(sink.writes.at(-1)).toBe("live");
		expect(pulls).toBe(4);
	});

	it("skips empty source batches and keeps lastSent at the last frame written", async () => {
		const out = new Outbox(100);
		const sink = new FakeSink();
		const batches = [{ text: "a", lastId: 1 }, { text: "", lastId: 2 }, undefined];
		out.pull(() => batches.shift());
		const done = out.pump(sink);
		await tick();
		expect(batches).toEqual([]);
		out.end();
		await done;
		expect(sink.writes).toEqual(["a"]);
		expect(out.lastSent).toBe(1);
	});

	it("end() stops a replay that is still pulling (client gone, or dropped)", async () => {
		const out = new Outbox(100);
		const sink = new FakeSink();
		sink.held = true;
		out.pull(() => ({ text: "r", lastId: 1 }));
		const done = out.pump(sink);
		await tick();
		out.end();
		sink.release();
		await done;
		expect(sink.writes).toEqual(["r"]);
	});

	it("stops writing when the socket is gone", async () => {
		const out = new Outbox(100);
		const sink = new FakeSink();
		const done = out.pump(sink);
		out.push("a");
		await tick();
		sink.aborted = true;
		out.push("b");
		await done;
		expect(sink.writes).toEqual(["a"]);
	});
});
