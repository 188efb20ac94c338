import { join } from "node:path";
import { fetchEventSource } from "@microsoft/fetch-event-source";
import { createEventSource } from "eventsource-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundledPiCli } from "../../src/sessions/process/spawn.ts";
import { fixtures, startTestGateway, stdinRecord, type TestGateway, until } from "../helpers/gateway.ts";
import { collect as readSse } from "../helpers/sse.ts";
import { startProxy, type TcpProxy } from "../helpers/tcp-proxy.ts";

// Issue 31 item 4: retrying SSE libraries re-POST a run command with Last-Event-ID after a cut.
// That is a resume of the stream they lost, never a second prompt: real pi behind a stdin
// recorder proves what reached it, the real libraries do the retrying, a TCP proxy cuts.
let gw: TestGateway;
let proxy: TcpProxy;
const record = stdinRecord("resume");
const sentOf = (type: string) => record.commands().filter((command) => command.type === type);

beforeAll(async () => {
	gw = await startTestGateway({
		piCommand: [process.execPath, join(fixtures, "tee-pi.mjs"), record.path, bundledPiCli()],
		sandboxWritable: [record.path],
	});
	proxy = await startProxy(Number(new URL(gw.url).port));
	// fetch-event-source is written for browsers: it reaches for window's timers and document's
	// visibility events. Node has the timers on globalThis; the document never hides.
	const g = globalThis as Record<string, unknown>;
	g.window ??= globalThis;
	g.document ??= { hidden: false, addEventListener() {}, removeEventListener() {} };
});
afterAll(async () => {
	await proxy?.close();
	await gw?.stop();
});

const headers = (): Record<string, string> => ({
	"content-type": "application/json",
	...(gw.config.token ? { authorization: `Bearer ${gw.config.token}` } : {}),
});

/** fetch, recording the Last-Event-ID of each request the library makes (the proxy sees connections, not requests). */
function recordingFetch() {
	const resumes: (string | null)[] = [];
	const recorded = (input: string | URL | Request, init?: RequestInit) => {
		resumes.push(new Headers(init?.headers).get("last-event-id"));
		return fetch(input, init);
	};
	return { resumes, fetch: recorded };
}

interface Frame {
	id: string;
	event: string;
	data: string;
}

/** The text the run's deltas carried, in order. */
const deltas = (frames: Frame[]) =>
	frames
		.filter((f) => f.event === "message_update")
		.map((f) => JSON.parse(f.data).assistantMessageEvent)
		.filter((e) => e.type === "text_delta")
		.map((e) => e.delta)
		.join("");

const upTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1).join(" ");

/** Every id once, in increasing order (the stream_open frames carry none). */
function expectExactlyOnce(frames: Frame[]) {
	const ids = frames.filter((f) => f.id).map((f) => Number(f.id));
	expect(ids).toEqual([...new Set(ids)].sort((a, b) => a - b));
}

describe("a retried POST with Last-Event-ID resumes the run", () => {
	it("@microsoft/fetch-event-source: a cut mid-run gets the rest of the same run once, and pi one prompt", async () => {
		const id = await gw.session();
		const before = sentOf("prompt").length;
		const requests = recordingFetch();
		const frames: Frame[] = [];
		let cut = false;
		await fetchEventSource(`http://127.0.0.1:${proxy.port}/v1/sessions/${id}/prompt`, {
			method: "POST",
			headers: headers(),
			body: JSON.stringify({ message: "slow: 25" }),
			openWhenHidden: true,
			fetch: requests.fetch,
			onmessage(message) {
				frames.push({ id: message.id, event: message.event, data: message.data });
				if (!cut && frames.filter((f) => f.event === "message_update").length >= 5) {
					cut = true;
					proxy.cut();
				}
			},
			// Retry at once; the library's default waits a second.
			onerror: () => 50,
		});
		expect(cut).toBe(true);
		expect(requests.resumes).toHaveLength(2);
		expect(requests.resumes[0]).toBeNull();
		expect(requests.resumes[1]).toMatch(/^\d+$/);
		expect(frames.filter((f) => f.event === "stream_open").map((f) => JSON.parse(f.data).resumed)).toEqual([
			undefined,
			true,
		]);
		expectExactlyOnce(frames);
		expect(deltas(frames)).toBe(upTo(25));
		expect(frames.at(-1)?.event).toBe("agent_settled");
		expect(frames.filter((f) => f.event === "agent_settled")).toHaveLength(1);
		expect(sentOf("prompt").length - before).toBe(1);
	});

	it("eventsource-client: reconnects into the same run, then 204 tells it the run is over", async () => {
		const id = await gw.session();
		const before = sentOf("prompt").length;
		const requests = recordingFetch();
		const frames: Frame[] = [];
		let cut = false;
		let closed = false;
		const es = createEventSource({
			url: `http://127.0.0.1:${proxy.port}/v1/sessions/${id}/prompt`,
			method: "POST",
			headers: headers(),
			body: JSON.stringify({ message: "slow: 25" }),
			fetch: requests.fetch,
			onMessage(message) {
				frames.push({ id: message.id ?? "", event: message.event ?? "", data: message.data });
				if (!cut && frames.filter((f) => f.event === "message_update").length >= 5) {
					cut = true;
					proxy.cut();
				}
			},
		});
		try {
			// Like EventSource it reconnects after every end; the resume after agent_settled answers 204: stop.
			await until(() => es.readyState === "closed" && frames.some((f) => f.event === "agent_settled"), 30_000);
			closed = true;
		} finally {
			es.close();
		}
		expect(closed).toBe(true);
		// The first POST, the one after the cut, and the one after the end that the 204 answered.
		expect(requests.resumes).toHaveLength(3);
		expect(requests.resumes[0]).toBeNull();
		expect(requests.resumes[2]).toBe(frames.find((f) => f.event === "agent_settled")?.id);
		expectExactlyOnce(frames);
		expect(deltas(frames)).toBe(upTo(25));
		expect(frames.filter((f) => f.event === "agent_settled")).toHaveLength(1);
		expect(sentOf("prompt").length - before).toBe(1);
	});
});

describe("what a resume answers", () => {
	it("an id from a run that ended: the rest of that run, then the end; its last id: 204; nothing reaches pi", async () => {
		const id = await gw.session();
		const first = await gw.fetch(`/v1/sessions/${id}/prompt/stream`, {
			method: "POST",
			headers: headers(),
			body: JSON.stringify({ message: "count: 12" }),
		});
		const all = await readSse(first);
		const settled = all.find((f) => f.event === "agent_settled");
		const updates = all.filter((f) => f.event === "message_update");
		const from = Number(updates[3]?.id);
		const prompts = sentOf("prompt").length;
		// A later run must not leak into the resumed one.
		const later = await gw.api(`/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			json: { message: "echo: later" },
		});
		expect(later.status).toBe(200);

		// The plain path with JSON's Accept, the /stream path, and ?after= all resume.
		for (const [path, extra] of [
			["/prompt", { "last-event-id": String(from), accept: "application/json" }],
			["/prompt/stream", { "last-event-id": String(from) }],
			[`/prompt/stream?after=${from}`, {}],
		] as const) {
			const res = await gw.fetch(`/v1/sessions/${id}${path}`, {
				method: "POST",
				headers: { ...headers(), ...extra },
				body: JSON.stringify({ message: "count: 12" }),
			});
			expect(res.status).toBe(200);
			expect(res.headers.get("content-type")).toBe("text/event-stream");
			const frames = await readSse(res);
			expect(JSON.parse(frames[0]?.data ?? "{}")).toMatchObject({ type: "stream_open", after: from, resumed: true });
			expect(frames.slice(1).map((f) => f.id)).toEqual(all.filter((f) => Number(f.id) > from).map((f) => f.id));
			expect(frames.at(-1)?.id).toBe(settled?.id);
		}
		const done = await gw.fetch(`/v1/sessions/${id}/prompt/stream`, {
			method: "POST",
			headers: { ...headers(), "last-event-id": String(settled?.id) },
			body: JSON.stringify({ message: "count: 12" }),
		});
		expect(done.status).toBe(204);
		expect(sentOf("prompt").length - prompts).toBe(1); // the waited "later" prompt only
	});

	it("steer and follow-up resume the run they joined, and send nothing either", async () => {
		const id = await gw.session();
		const started = await gw.api(`/v1/sessions/${id}/prompt`, { method: "POST", json: { message: "slow: 15" } });
		expect(started.status).toBe(202);
		const steer = await gw.fetch(`/v1/sessions/${id}/steer/stream`, {
			method: "POST",
			headers: headers(),
			body: JSON.stringify({ message: "echo: steered" }),
		});
		const all = await readSse(steer);
		expect(all.at(-1)?.event).toBe("agent_settled");
		const from = Number(all.find((f) => f.event === "message_update")?.id);
		const [steers, followUps] = [sentOf("steer").length, sentOf("follow_up").length];
		for (const path of ["/steer/stream", "/follow-up", "/steer"]) {
			const res = await gw.fetch(`/v1/sessions/${id}${path}`, {
				method: "POST",
				headers: { ...headers(), "last-event-id": String(from) },
				body: JSON.stringify({ message: "echo: steered" }),
			});
			const frames = await readSse(res);
			expect(frames.slice(1).map((f) => f.id)).toEqual(all.filter((f) => Number(f.id) > from).map((f) => f.id));
		}
		expect([sentOf("steer").length, sentOf("follow_up").length]).toEqual([steers, followUps]);
	});

	it("bad or impossible positions are problem+json before pi; Idempotency-Key with a resume is refused", async () => {
		const id = await gw.session();
		const prompts = sentOf("prompt").length;
		const post = (extra: Record<string, string>, path = "/prompt/stream") =>
			gw.fetch(`/v1/sessions/${id}${path}`, {
				method: "POST",
				headers: { ...headers(), ...extra },
				body: JSON.stringify({ message: "hi" }),
			});
		const bad = await post({ "last-event-id": "abc" });
		expect(bad.status).toBe(400);
		expect(bad.headers.get("content-type")).toContain("application/problem+json");
		const past = await post({ "last-event-id": "999999" });
		expect(past.status).toBe(400);
		expect(((await past.json()) as { code: string }).code).toBe("position_out_of_range");
		const keyed = await post({ "last-event-id": "1", "idempotency-key": "k-1", accept: "application/json" }, "/prompt");
		expect(keyed.status).toBe(400);
		expect(((await keyed.json()) as { code: string }).code).toBe("idempotency_not_streamable");
		expect(sentOf("prompt").length).toBe(prompts);
	});

	it("the bash stream resumes with its own command's events only", async () => {
		const id = await gw.session();
		const res = await gw.fetch(`/v1/sessions/${id}/bash/stream`, {
			method: "POST",
			headers: headers(),
			body: JSON.stringify({ command: "for i in 1 2 3 4 5; do echo line $i; done" }),
		});
		const all = await readSse(res);
		const bashes = sentOf("bash").length;
		const firstId = all.find((f) => f.id)?.id;
		const again = await gw.fetch(`/v1/sessions/${id}/bash/stream`, {
			method: "POST",
			headers: { ...headers(), "last-event-id": String(firstId) },
			body: JSON.stringify({ command: "for i in 1 2 3 4 5; do echo line $i; done" }),
		});
		const rest = await readSse(again);
		expect(rest.slice(1).map((f) => f.id)).toEqual(
			all.filter((f) => f.id && Number(f.id) > Number(firstId)).map((f) => f.id),
		);
		expect(rest.at(-1)?.event).toBe("response");
		expect(sentOf("bash").length).toBe(bashes);
	});
});

describe("an id the log no longer holds", () => {
	let small: TestGateway;
	beforeAll(async () => {
		small = await startTestGateway({ eventLogMaxEvents: 20 });
	});
	afterAll(() => small?.stop());

	it("gets a gap frame, then the rest of the run", async () => {
		const id = await small.session();
		const res = await small.fetch(`/v1/sessions/${id}/prompt/stream`, {
			method: "POST",
			headers: { "content-type": "application/json" },
			body: JSON.stringify({ message: "count: 60" }),
		});
		const all = await readSse(res);
		const from = Number(all.find((f) => f.event === "message_update")?.id);
		const again = await small.fetch(`/v1/sessions/${id}/prompt/stream`, {
			method: "POST",
			headers: { "content-type": "application/json", "last-event-id": String(from) },
			body: JSON.stringify({ message: "count: 60" }),
		});
		const frames = await readSse(again);
		expect(frames[1]?.event).toBe("gap");
		expect(JSON.parse(frames[1]?.data ?? "{}")).toMatchObject({ after: from });
		expect(frames.at(-1)?.event).toBe("agent_settled");
	});
});
