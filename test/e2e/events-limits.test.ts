import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { noPool, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { openRaw, parseFrames } from "../helpers/raw-sse.ts";
import { collect, type Frame } from "../helpers/sse.ts";

// The bounds: a log that overflows, a reader that stalls, a subscriber limit, a shutdown.
const open = (gw: TestGateway, path: string, headers: Record<string, string> = {}) =>
	gw.fetch(path, { headers: { accept: "text/event-stream", ...headers } });
const wire = (frames: Frame[]) => frames.map(({ id, event, data }) => ({ id, event, data }));
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => String(from + i));

describe("a small log (50 events) and at most 2 subscribers", () => {
	let gw: TestGateway;
	let id: string;
	beforeAll(async () => {
		gw = await startTestGateway({ ...noPool, eventLogMaxEvents: 50, maxSubscribers: 2 });
		id = await gw.session({ persist: false });
	});
	afterAll(() => gw?.stop());

	it("a position older than the log gets a gap frame saying what was lost, then the stream goes on", async () => {
		const res = await gw.api(`/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			json: { message: "count: 200" },
		});
		expect(res.status).toBe(200);
		const log = gw.registry.get(id).events;
		const [first, last] = [log.firstSeq, log.lastSeq];
		expect(last - first + 1).toBe(50);
		for (const [query, headers, after] of [
			["?after=0", {}, 0],
			["", { "last-event-id": "7" }, 7],
		] as const) {
			const frames = await collect(
				await open(gw, `/v1/sessions/${id}/events${query}`, headers),
				(f) => f.id === String(last),
			);
			expect(frames[0]?.json).toEqual({
				type: "stream_open",
				sessionId: id,
				after,
				lastEventId: last,
				firstAvailable: first,
				status: "idle",
			});
			expect(frames[1]).toMatchObject({ id: String(first - 1), event: "gap" });
			expect(frames[1]?.json).toEqual({
				type: "gap",
				sessionId: id,
				after,
				firstAvailable: first,
				lost: first - after - 1,
			});
			expect(frames.slice(2).map((f) => f.id)).toEqual(range(first, last));
			expect(frames.slice(2).map((f) => f.data)).toEqual(log.since(0).events.map((e) => String(e.data)));
		}
	});

	it("refuses a third subscriber with 429 until one leaves", async () => {
		const a = await open(gw, `/v1/sessions/${id}/events`);
		const b = await open(gw, `/v1/sessions/${id}/events`);
		const third = await gw.api(`/v1/sessions/${id}/events`);
		expect(third.status).toBe(429);
		expect(third.body).toMatchObject({ code: "too_many_subscribers" });
		await a.body?.cancel();
		await until(() => gw.registry.get(id).sseSubscribers === 1, 2000);
		const c = await open(gw, `/v1/sessions/${id}/events`);
		expect(c.status).toBe(200);
		await Promise.all([b.body?.cancel(), c.body?.cancel()]);
	});
});

describe("a reader that stops reading (1 MiB buffer)", () => {
	let gw: TestGateway;
	let id: string;
	beforeAll(async () => {
		// A long heartbeat also gives the stalled socket a long grace to take its final frame.
		gw = await startTestGateway({
			...noPool,
			sseMaxBufferedBytes: 1024 * 1024,
			sseHeartbeatMs: 60_000,
			eventLogMaxEvents: 100_000,
			eventLogMaxBytes: 64 * 1024 * 1024,
		});
		id = await gw.session({ persist: false });
	});
	afterAll(() => gw?.stop());

	it("is dropped with a final frame, while pi and a fast reader go on; it resumes with Last-Event-ID", async () => {
		const session = gw.registry.get(id);
		const stalled = await openRaw(`${gw.url}/v1/sessions/${id}/events`, { authorization: `Bearer ${gw.config.token}` });
		await until(() => stalled.text().includes("stream_open"), 2000);
		stalled.res.pause();
		const fast = await open(gw, `/v1/sessions/${id}/events`);
		const fastFrames = collect(fast, (f) => f.event === "agent_settled");
		expect(session.sseSubscribers).toBe(2);
		// 50000 deltas, 16 MB of frames: far more than the kernel's socket buffers can hide (about
		// 4 MB here), so the gateway's own buffer must overflow.
		const message = "count: 50000";
		const accepted = await gw.api(`/v1/sessions/${id}/prompt`, { method: "POST", json: { message } });
		expect(accepted.status).toBe(202);
		const all = await fastFrames;
		// The run ended although one reader has not read a byte of it: pi never waited for it.
		expect(all.filter((f) => f.event === "message_update")).toHaveLength(50002);
		await until(() => session.status === "idle");
		// The stalled reader was cut off (unsubscribed) while its socket is still open.
		await until(() => session.sseSubscribers === 0, 2000);
		expect(stalled.socket.destroyed).toBe(false);

		stalled.res.resume();
		await stalled.closed; // the server ends the stream after the dropped frame
		const got = parseFrames(stalled.text());
		const dropped = got.at(-1);
		expect(dropped?.event).toBe("dropped");
		expect(dropped?.id).toBeUndefined();
		const received = got.slice(0, -1);
		const lastId = received.at(-1)?.id as string;
		expect(dropped?.json).toEqual({
			type: "dropped",
			reason: "slow_consumer",
			detail: "more than 1048576 bytes were waiting for this client; reconnect with Last-Event-ID",
			resumeFrom: Number(lastId),
		});
		// What it got is an exact prefix of what the fast reader got.
		expect(wire(received)).toEqual(wire(all.slice(0, received.length)));
		expect(received.length).toBeLessThan(all.length - 1000);

		const rest = await collect(
			await open(gw, `/v1/sessions/${id}/events`, { "last-event-id": lastId }),
			(f) => f.event === "agent_settled",
		);
		expect(wire([...received, ...rest.slice(1)])).toEqual(wire(all));
	});
});

describe("gateway shutdown", () => {
	it("ends every open stream: the session's with session_exit, the all-sessions one with shutdown", async () => {
		const gw = await startTestGateway(noPool);
		try {
			const id = await gw.session({ persist: false });
			const sessionFrames = collect(await open(gw, `/v1/sessions/${id}/events`));
			const hubFrames = collect(await open(gw, "/v1/events"));
			await gw.close();
			const [own, hub] = await Promise.all([sessionFrames, hubFrames]);
			expect(own.map((f) => f.event)).toEqual(["stream_open", "session_status", "session_exit"]);
			expect(own.at(-1)?.json).toMatchObject({ sessionId: id, reason: "shutdown" });
			expect(hub.map((f) => f.event)).toEqual(["stream_open", "shutdown", "session_status", "session_exit"]);
			expect(hub[1]?.json).toEqual({ type: "shutdown", reason: "the gateway is shutting down" });
		} finally {
			await gw.stop();
		}
	});
});
