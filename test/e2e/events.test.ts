import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { noPool, runEnded, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { openRaw, parseFrames } from "../helpers/raw-sse.ts";
import { collect, type Frame, readFrames } from "../helpers/sse.ts";

// GET /v1/sessions/{id}/events and GET /v1/events, with real pi and the demo model.
let gw: TestGateway;
let id: string;

beforeAll(async () => {
	gw = await startTestGateway({ ...noPool, sseHeartbeatMs: 200 });
	id = await gw.session({ name: "events", persist: false });
});

// No test starts while the previous one's run is still ending (its run_changes not yet logged).
beforeEach(() => runEnded(gw, id));

afterAll(() => gw?.stop());

const open = (path: string, headers: Record<string, string> = {}, signal?: AbortSignal) =>
	gw.fetch(path, { headers: { accept: "text/event-stream", ...headers }, signal });
const events = (query = "", headers: Record<string, string> = {}) => open(`/v1/sessions/${id}/events${query}`, headers);
const settled = (f: Frame) => f.event === "agent_settled";
const prompt = (message: string, sid = id) =>
	gw.api(`/v1/sessions/${sid}/prompt`, { method: "POST", json: { message } });
const deltas = (frames: Frame[]) =>
	frames
		.filter((f) => f.event === "message_update" && f.json.assistantMessageEvent.type === "text_delta")
		.map((f) => f.json.assistantMessageEvent.delta as string)
		.join("");
/** What a client keeps of a frame: id, event and the data exactly as sent. */
const wire = (frames: Frame[]) => frames.map(({ id, event, data }) => ({ id, event, data }));
const subscribers = () => gw.registry.get(id).sseSubscribers;

describe("a session's event stream", () => {
	it("opens with a frame that says where the client joined, and headers that stop proxy buffering", async () => {
		const log = gw.registry.get(id).events;
		const res = await events();
		expect(res.status).toBe(200);
		expect(res.headers.get("content-type")).toBe("text/event-stream");
		expect(res.headers.get("cache-control")).toBe("no-cache, no-transform");
		expect(res.headers.get("x-accel-buffering")).toBe("no");
		const [first] = await collect(res, () => true);
		expect([first?.event, first?.id]).toEqual(["stream_open", undefined]);
		expect(first?.json).toEqual({
			type: "stream_open",
			sessionId: id,
			after: log.lastSeq,
			lastEventId: log.lastSeq,
			firstAvailable: 1,
			status: "idle",
		});
	});

	it("a long reply (5000 deltas) reaches every subscriber complete, in order and identical; types filters", async () => {
		const [a, b, c] = await Promise.all([events(), events(), events("?types=message_update,agent_settled")]);
		const runs = [collect(a, settled), collect(b, settled), collect(c, settled)];
		expect((await prompt("count: 5000")).status).toBe(202);
		const [fa, fb, fc] = (await Promise.all(runs)) as [Frame[], Frame[], Frame[]];
		const joined = Number(fa[1]?.id);
		expect(fa.slice(1).map((f) => Number(f.id))).toEqual(Array.from({ length: fa.length - 1 }, (_, i) => joined + i));
		expect(deltas(fa)).toBe(Array.from({ length: 5000 }, (_, i) => i + 1).join(" "));
		expect(fa.filter((f) => f.event === "message_update")).toHaveLength(5002); // start, 5000 deltas, end
		expect(wire(fb)).toEqual(wire(fa));
		const wanted = fa.filter((f) => f.event === "message_update" || f.event === "agent_settled");
		expect(wire(fc.slice(1))).toEqual(wire(wanted));
		expect(fc[0]?.event).toBe("stream_open");
		const end = fa.findLast((f) => f.event === "message_end");
		expect(end?.json.message.content[0].text).toBe(deltas(fa));
	});

	it("U+2028/U+2029, emoji and CJK arrive byte-identical, unescaped", async () => {
		const text = "a\u2028b\u2029c 😀 👩‍👩‍👧 中文字符 한국어 ☃ \u2028\u2029 end";
		const res = await gw.fetch(`/v1/sessions/${id}/prompt`, {
			method: "POST",
			body: JSON.stringify({ message: `echo: ${text}` }),
			headers: { accept: "text/event-stream", "content-type": "application/json" },
		});
		const raw = Buffer.from(await res.arrayBuffer());
		const frames = parseFrames(raw.toString("utf8"));
		expect(frames.at(-1)?.event).toBe("agent_settled");
		expect(Buffer.from(deltas(frames))).toEqual(Buffer.from(text));
		// pi does not escape U+2028 in JSON and the gateway passes its line through untouched.
		expect(raw.includes(Buffer.from("b\u2029c"))).toBe(true);
		const last = await gw.api(`/v1/sessions/${id}/last-assistant-text`);
		expect(last.body.text).toBe(text);
	});

	it("a client that drops mid-run and resumes with Last-Event-ID ends with exactly what a connected client saw", async () => {
		const connected = await events();
		const whole = collect(connected, settled);
		const stop = new AbortController();
		const first: Frame[] = [];
		const dropping = await open(`/v1/sessions/${id}/events`, {}, stop.signal);
		expect((await prompt("slow: 8")).status).toBe(202);
		for await (const frame of readFrames(dropping)) {
			first.push(frame);
			if (first.filter((f) => f.json?.assistantMessageEvent?.type === "text_delta").length === 3) break;
		}
		await until(() => subscribers() === 1, 2000);
		const lastId = first.at(-1)?.id as string;
		const resumed = await collect(await events("", { "last-event-id": lastId }), settled);
		expect(resumed[0]?.json).toMatchObject({ type: "stream_open", after: Number(lastId) });
		const all = await whole;
		expect(wire([...first.slice(1), ...resumed.slice(1)])).toEqual(wire(all.slice(1)));
		// ?after= is the same position without the header.
		const again = await collect(await events(`?after=${lastId}`), settled);
		expect(wire(again.slice(1))).toEqual(wire(resumed.slice(1)));
	});

	it("an id names exactly one event: stream_open carries none, so a resume never reuses one", async () => {
		const stop = new AbortController();
		const first: Frame[] = [];
		const dropping = await open(`/v1/sessions/${id}/events`, {}, stop.signal);
		const run = prompt("slow: 6");
		for await (const frame of readFrames(dropping)) {
			first.push(frame);
			if (first.filter((f) => f.json?.assistantMessageEvent?.type === "text_delta").length === 2) break;
		}
		expect((await run).status).toBe(202);
		const lastId = first.at(-1)?.id as string;
		const resumed = await collect(await events("", { "last-event-id": lastId }), settled);
		const named = new Map<string, string>();
		for (const f of [...first, ...resumed]) {
			if (f.id === undefined) continue;
			const seen = named.get(f.id);
			expect(seen === undefined || seen === `${f.event}\n${f.data}`, `id ${f.id} names two events`).toBe(true);
			named.set(f.id, `${f.event}\n${f.data}`);
		}
		expect([first[0], resumed[0]].map((f) => [f?.event, f?.id])).toEqual([
			["stream_open", undefined],
			["stream_open", undefined],
		]);
	});

	it("refuses a position past the end of the log", async () => {
		const last = gw.registry.get(id).events.lastSeq;
		const res = await gw.api(`/v1/sessions/${id}/events?after=${last + 1}`);
		expect(res.status).toBe(400);
		expect(res.body).toMatchObject({ code: "position_out_of_range" });
		expect((await gw.api(`/v1/sessions/${id}/events`, { headers: { "last-event-id": "x1" } })).status).toBe(400);
		expect((await gw.api(`/v1/sessions/${id}/events?types=Bad-Type`)).status).toBe(400);
		expect((await gw.api("/v1/sessions/ses_nope/events")).status).toBe(404);
	});

	it("sends heartbeat comments on a quiet stream", async () => {
		const raw = await openRaw(`${gw.url}/v1/sessions/${id}/events`, { authorization: `Bearer ${gw.config.token}` });
		await until(() => (raw.text().match(/^: heartbeat\n\n/gm)?.length ?? 0) >= 2);
		raw.socket.destroy();
	});

	it("a client whose socket goes away is unsubscribed at once", async () => {
		const log = gw.registry.get(id).events;
		await until(() => subscribers() === 0, 2000);
		const listenersBefore = log.listenerCount;
		const raw = await openRaw(`${gw.url}/v1/sessions/${id}/events`, { authorization: `Bearer ${gw.config.token}` });
		await until(() => raw.text().includes("stream_open"), 2000);
		expect(subscribers()).toBe(1);
		expect(log.listenerCount).toBe(listenersBefore + 1);
		raw.socket.destroy();
		await until(() => subscribers() === 0, 2000);
		expect(log.listenerCount).toBe(listenersBefore);
	});
});

describe("the stream's end and the all-sessions stream", () => {
	it("GET /v1/events carries every session's events, each id naming its session", async () => {
		const other = await gw.session({ persist: false });
		const start = { [id]: gw.registry.get(id).events.lastSeq, [other]: gw.registry.get(other).events.lastSeq };
		const hub = await open("/v1/events");
		const onlySettled = await open("/v1/events?types=agent_settled");
		let seen = 0;
		const hubFrames = collect(hub, (f) => settled(f) && ++seen === 2);
		const settledFrames = collect(onlySettled, (f) => f.event === "agent_settled" && f.id?.startsWith(other) === true);
		await Promise.all([prompt("echo: one", id), prompt("echo: two", other)]);
		const frames = await hubFrames;
		expect(frames[0]?.json.type).toBe("stream_open");
		expect(frames[0]?.json.sessions).toEqual(
			expect.arrayContaining([
				expect.objectContaining({ id, lastEventId: start[id], status: "idle" }),
				expect.objectContaining({ id: other, lastEventId: start[other], status: "idle" }),
			]),
		);
		for (const sid of [id, other]) {
			// The hub's frames of one session are that session's log, in order, with nothing left out.
			const mine = frames.filter((f) => f.id?.startsWith(`${sid}:`));
			const fromLog = gw.registry
				.get(sid)
				.events.since(start[sid] as number)
				.events.slice(0, mine.length);
			expect(mine.some(settled)).toBe(true);
			expect(mine.map((f) => f.id)).toEqual(fromLog.map((e) => `${sid}:${e.seq}`));
			expect(mine.map((f) => f.data)).toEqual(fromLog.map((e) => String(e.data)));
		}
		expect(deltas(frames.filter((f) => f.id?.startsWith(`${other}:`)))).toBe("two");
		const onlyTypes = await settledFrames;
		expect(new Set(onlyTypes.slice(1).map((f) => f.event))).toEqual(new Set(["agent_settled"]));
		await gw.api(`/v1/sessions/${other}`, { method: "DELETE" });
	});

	it("the stream ends after session_exit when the session is deleted", async () => {
		const sid = await gw.session({ persist: false });
		const res = await open(`/v1/sessions/${sid}/events`);
		const frames = collect(res);
		expect((await gw.api(`/v1/sessions/${sid}`, { method: "DELETE" })).status).toBe(204);
		const all = await frames; // returns only because the server ended the stream
		expect(all.map((f) => f.event)).toEqual(["stream_open", "session_status", "session_exit"]);
		expect(all[1]?.json).toMatchObject({ status: "exited" });
		expect(all[2]?.json).toMatchObject({ sessionId: sid, reason: "stopped", code: 0 });
	});
});
