import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
	type Approval,
	GatewayError,
	LineParser,
	PiGateway,
	type StreamEvent,
	StreamInterruptedError,
} from "../../src/client/index.ts";
import { noPool, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { readFrames } from "../helpers/sse.ts";
import { startProxy, type TcpProxy } from "../helpers/tcp-proxy.ts";

// The first-party TypeScript client (src/client, shipped as `pi-gateway/client` and packed from
// clients/typescript) against a live gateway with real pi, the demo model and the shipped permission gate.
const run = promisify(execFile);
const repo = resolve(import.meta.dirname, "../..");
const clientDir = join(repo, "src/client");
const token = "client-ts-test-token-0123456789";

let gw: TestGateway;
let client: PiGateway;
let proxy: TcpProxy;
beforeAll(async () => {
	gw = await startTestGateway({ token, ...noPool });
	client = new PiGateway({ baseUrl: gw.url, token, reconnect: { delayMs: 50 } });
	proxy = await startProxy(Number(new URL(gw.url).port));
});
afterAll(async () => {
	await proxy?.close();
	await gw?.stop();
});

const deltas = (events: StreamEvent[]) =>
	events
		.filter((e) => e.type === "message_update")
		.map((e) => (e as { assistantMessageEvent: { type: string; delta?: string } }).assistantMessageEvent)
		.filter((u) => u.type === "text_delta")
		.map((u) => u.delta)
		.join("");

/** The session's log from `after` through the first event `stop` accepts, as the gateway holds it. */
async function logged(id: string, after: number, stop: (e: StreamEvent) => boolean): Promise<StreamEvent[]> {
	const res = await gw.fetch(`/v1/sessions/${id}/events?after=${after}`);
	const out: StreamEvent[] = [];
	for await (const frame of readFrames(res)) {
		if (frame.json.type === "stream_open") continue;
		out.push(frame.json);
		if (stop(frame.json)) break;
	}
	return out;
}

describe("the package", () => {
	it("schema.ts is what `npm run clients:types` makes of openapi.yaml", async () => {
		const out = join(mkdtempSync(join(tmpdir(), "client-types-")), "schema.ts");
		const bin = join(repo, "node_modules/.bin/openapi-typescript");
		await run(bin, ["openapi.yaml", "--default-non-nullable", "false", "-o", out], { cwd: repo });
		const fresh = readFileSync(out, "utf8");
		rmSync(dirname(out), { recursive: true });
		expect(fresh === readFileSync(join(clientDir, "schema.ts"), "utf8"), "run `npm run clients:types`").toBe(true);
	});

	it("compiles under its own tsconfig, and imports nothing outside its folder (no server code)", async () => {
		const tsc = join(repo, "node_modules/.bin/tsc");
		const result = await run(tsc, ["--noEmit", "-p", join(repo, "clients/typescript/tsconfig.json")]).catch((e) => e);
		expect(`${result.stdout}${result.stderr ?? ""}`).toBe("");
		for (const file of readdirSync(clientDir).filter((f) => f.endsWith(".ts"))) {
			const { importedFiles } = ts.preProcessFile(readFileSync(join(clientDir, file), "utf8"), true, true);
			for (const ref of importedFiles) expect(ref.fileName, file).toMatch(/^\.\/[\w-]+\.ts$/);
		}
	});

	it("package.json exports pi-gateway/client as built JS with its types, which the server's build writes", () => {
		const pkg = JSON.parse(readFileSync(join(repo, "package.json"), "utf8"));
		expect(pkg.exports["./client"]).toEqual({ types: "./dist/client/index.d.ts", default: "./dist/client/index.js" });
		// src/client/ compiles with the server (rootDir src, outDir dist): dist/client/ is the bridge's and the export's.
		const build = ts.readConfigFile(join(repo, "tsconfig.build.json"), ts.sys.readFile).config;
		expect(pkg.scripts.build).toContain("tsc -p tsconfig.build.json");
		expect(build.compilerOptions).toMatchObject({ rootDir: "src", outDir: "dist", declaration: true });
		expect(build.include).toEqual(["src"]);
	});
});

describe("the SSE parser", () => {
	const parse = (chunks: string[]) => {
		const retries: number[] = [];
		const parser = new LineParser({ onRetry: (ms) => retries.push(ms) });
		const frames = chunks.flatMap((c, i) => [...parser.feed(c, i === chunks.length - 1)]);
		return { frames, retries };
	};

	it("takes LF, CR and CRLF line ends, a CRLF split across chunks, comments, retry and multi-line data", () => {
		const { frames, retries } = parse([
			"\uFEFFid: 1\r",
			"\nevent: a\rdata: x\r\ndata:  y\n\n: heartbeat\nretry: 1500\nretry: soon\n",
			"data\n\nid: 2\0\nevent: b\ndata: {}\r\r",
			"data: unfinished",
		]);
		expect(frames).toEqual([
			{ id: "1", lastEventId: "1", event: "a", data: "x\n y" },
			{ id: undefined, lastEventId: "1", event: "message", data: "" },
			{ id: undefined, lastEventId: "1", event: "b", data: "{}" },
		]);
		expect(retries).toEqual([1500]);
	});
});

describe("the resume rules, against a scripted server", () => {
	it("dropped → resumeFrom, a doubled frame dropped, gap yielded, a cut mid-frame resumed, retry: honoured", async () => {
		const heads: (string | undefined)[] = [];
		const script = [
			// retry: 30 overrides the client's 5 s delay: the test finishing fast shows it was honoured.
			'retry: 30\n\nevent: stream_open\ndata: {"type":"stream_open","after":0}\n\nid: 1\ndata: {"type":"agent_start"}\n\nid: 2\r\ndata: {"type":"turn_start"}\r\n\r\nevent: dropped\ndata: {"type":"dropped","reason":"slow","detail":"behind","resumeFrom":2}\n\n',
			'data: {"type":"stream_open","after":2}\n\nid: 2\ndata: {"type":"turn_start"}\n\nid: 9\ndata: {"type":"gap","after":2,"firstAvailable":10,"lost":7}\n\nid: 10\ndata: {"type":"agent_end"}\n\nid: 11\ndata: {"type":"ag',
			'data: {"type":"stream_open","after":10}\n\nid: 11\ndata: {"type":"agent_settled"}\n\nid: 12\ndata: {"type":"session_exit","resumable":false}\n\n',
		];
		const server = createServer((req, res) => {
			heads.push(req.headers["last-event-id"] as string | undefined);
			const body = script[heads.length - 1] ?? "";
			res.writeHead(200, { "content-type": "text/event-stream" });
			res.write(body);
			// The second connection breaks in the middle of a frame.
			if (heads.length === 2) setTimeout(() => res.socket?.destroy(), 20);
			else res.end();
		});
		await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
		try {
			const port = (server.address() as AddressInfo).port;
			const scripted = new PiGateway({ baseUrl: `http://127.0.0.1:${port}`, reconnect: { delayMs: 5000 } });
			const started = Date.now();
			const stream = scripted.events("ses_x");
			const types: string[] = [];
			for await (const event of stream) types.push(event.type);
			expect(types).toEqual([
				"stream_open",
				"agent_start",
				"turn_start",
				"gap",
				"agent_end",
				"agent_settled",
				"session_exit",
			]);
			expect(heads).toEqual([undefined, "2", "10"]);
			expect([stream.reconnects, stream.lastEventId]).toEqual([2, 12]);
			expect(Date.now() - started).toBeLessThan(3000);
		} finally {
			server.closeAllConnections();
			await new Promise((r) => server.close(r));
		}
	});
});

describe("a run stream that ends before its run", () => {
	it("raises StreamInterruptedError, not a silent end (issue 31 item 5)", async () => {
		const server = createServer((_req, res) => {
			res.writeHead(200, { "content-type": "text/event-stream" });
			// Closed cleanly at a frame boundary, before the run's agent_settled.
			res.end(
				'event: stream_open\ndata: {"type":"stream_open","runId":"gw_1","after":0}\n\n' +
					'id: 1\ndata: {"id":"gw_1","type":"response","command":"prompt","success":true,"data":{"disposition":"started"}}\n\n' +
					'id: 2\ndata: {"type":"agent_start"}\n\n',
			);
		});
		await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
		try {
			const port = (server.address() as AddressInfo).port;
			const scripted = new PiGateway({ baseUrl: `http://127.0.0.1:${port}`, reconnect: { delayMs: 5 } });
			const types: string[] = [];
			const ended = (async () => {
				for await (const event of scripted.promptStream("ses_x", { message: "hi" })) types.push(event.type);
			})();
			await expect(ended).rejects.toBeInstanceOf(StreamInterruptedError);
			await expect(ended).rejects.toMatchObject({ lastEventId: "2" });
			expect(types).toEqual(["stream_open", "response", "agent_start"]);
		} finally {
			server.closeAllConnections();
			await new Promise((r) => server.close(r));
		}
	});
});

describe("PiGateway against a live gateway", () => {
	it("creates a session with the permission gate, streams the prompt, and the approvals helper answers the gate", async () => {
		const session = await client.createSession({ name: "ts-client", extensions: ["permission-gate"] });
		expect(session.status).toBe("idle");
		mkdirSync(join(gw.workspace, session.id, "scratch"), { recursive: true });
		const seen: Approval[] = [];
		const answering = client.approvals.answerNext(
			(approval) => {
				seen.push(approval);
				return { value: "Allow", by: "ts-client-test" };
			},
			{ sessionId: session.id, pollSeconds: 5 },
		);
		const events: StreamEvent[] = [];
		for await (const event of client.promptStream(session.id, { message: "bash: rm -rf ./scratch && echo removed" }))
			events.push(event);
		const resolved = await answering;
		expect(resolved?.status).toBe("answered");
		expect(seen.map((a) => [a.method, a.title.split("\n")[0]])).toEqual([["select", "Allow this bash command?"]]);
		const types = events.map((e) => e.type);
		expect(types[0]).toBe("stream_open");
		expect(types.at(-1)).toBe("agent_settled");
		expect(types).toContain("approval_requested");
		expect(types).toContain("tool_execution_end");
		expect(deltas(events)).toBe("The command finished. Output:\nremoved");
		expect(await client.lastAssistantText(session.id)).toEqual({ text: "The command finished. Output:\nremoved" });
		await client.deleteSession(session.id);
		const gone = await client.getSession(session.id).catch((e) => e);
		expect(gone).toBeInstanceOf(GatewayError);
		expect([404, 410]).toContain(gone.status);
	});

	it("a prompt stream cut mid-run resumes by the same POST with Last-Event-ID, nothing lost or doubled, one prompt", async () => {
		const viaProxy = new PiGateway({ baseUrl: `http://127.0.0.1:${proxy.port}`, token, reconnect: { delayMs: 50 } });
		const id = await gw.session();
		const stream = viaProxy.promptStream(id, { message: "slow: 12" });
		const events: StreamEvent[] = [];
		let cut = false;
		for await (const event of stream) {
			events.push(event);
			if (!cut && deltas(events).split(" ").length >= 3) {
				cut = true;
				proxy.cut();
			}
		}
		expect(stream.reconnects).toBe(1);
		expect(
			proxy.requests.some((r) => /^POST \/v1\/sessions\/\S+\/prompt\/stream/.test(r) && /last-event-id: \d+/i.test(r)),
		).toBe(true);
		expect(deltas(events)).toBe("1 2 3 4 5 6 7 8 9 10 11 12");
		const { messages } = await client.request("GET", "/v1/sessions/{id}/messages", { path: { id } });
		expect(messages.map((m) => m.role).filter((role) => role !== "system")).toEqual(["user", "assistant"]);
		const open = events[0] as { type: "stream_open"; after: number };
		// Exactly the log: every event once, in order.
		expect(events.slice(1)).toEqual(await logged(id, open.after, (e) => e.type === "agent_settled"));
		await client.deleteSession(id);
	});

	it("the session's event stream resumes after a cut too, and bash streams its output", async () => {
		const viaProxy = new PiGateway({ baseUrl: `http://127.0.0.1:${proxy.port}`, token, reconnect: { delayMs: 50 } });
		const id = await gw.session();
		const stream = viaProxy.events(id, { after: 0 });
		const events: StreamEvent[] = [];
		const reading = (async () => {
			for await (const event of stream) {
				events.push(event);
				if (event.type === "agent_settled") break;
			}
		})();
		await until(() => events.length > 0);
		proxy.cut();
		const bash: StreamEvent[] = [];
		for await (const event of client.bashStream(id, { command: "echo one; echo two" })) bash.push(event);
		expect(bash.map((e) => e.type)).toEqual([
			"stream_open",
			...bash.slice(1, -1).map(() => "bash_execution_update"),
			"response",
		]);
		expect((bash.at(-1) as { data: { output: string } }).data.output).toBe("one\ntwo\n");
		await client.promptAndWait(id, { message: "echo: after the cut" });
		await reading;
		expect(stream.reconnects).toBeGreaterThanOrEqual(1);
		expect(events.slice(1)).toEqual(await logged(id, 0, (e) => e.type === "agent_settled"));
		await client.deleteSession(id);
	});

	it("allEvents() reads back from each session's stream what a cut of the live-only /v1/events missed", async () => {
		// Reconnects keep failing while the proxy is away: allow them for 10 s.
		const reconnect = { delayMs: 50, maxAttempts: 200 };
		const viaProxy = new PiGateway({ baseUrl: `http://127.0.0.1:${proxy.port}`, token, reconnect });
		const id = await gw.session();
		const controller = new AbortController();
		const stream = viaProxy.allEvents({ signal: controller.signal });
		const mine: { seq: number | undefined; event: StreamEvent }[] = [];
		let opened!: () => void;
		const open = new Promise<void>((resolve) => {
			opened = resolve;
		});
		const reading = (async () => {
			for await (const item of stream) {
				if (item.event.type === "stream_open") opened();
				if (item.sessionId === id) mine.push({ seq: item.seq, event: item.event });
				if (item.sessionId === id && item.event.type === "agent_settled" && mine.length > 5) break;
			}
		})();
		await open;
		const before = gw.registry.get(id).events.lastSeq;
		// The gateway is out of reach while a whole run happens.
		await proxy.pause();
		await client.promptAndWait(id, { message: "echo: while you were away" });
		await proxy.resume();
		await reading;
		controller.abort();
		expect(stream.reconnects).toBeGreaterThanOrEqual(1);
		const seqs = mine.map((m) => m.seq as number);
		expect(seqs).toEqual([...new Set(seqs)].sort((a, b) => a - b));
		expect(mine.map((m) => m.event)).toEqual(await logged(id, before, (e) => e.type === "agent_settled"));
		expect(deltas(mine.map((m) => m.event))).toBe("while you were away");
		await client.deleteSession(id);
	});

	it("a wait-mode prompt answers the run's result; request() reaches any operation, typed", async () => {
		const id = await gw.session();
		const result = await client.promptAndWait(id, { message: "echo: waited" }, { seconds: 30 });
		expect("text" in result && result.text).toBe("waited");
		const state = await client.request("GET", "/v1/sessions/{id}/state", { path: { id } });
		expect(state.isStreaming).toBe(false);
		const messages = await client.request("GET", "/v1/sessions/{id}/messages", { path: { id } });
		expect(messages.messages.length).toBeGreaterThanOrEqual(2);
		// 204: no body, so undefined.
		expect(await client.request("PUT", "/v1/sessions/{id}/name", { path: { id }, body: { name: "renamed" } })).toBe(
			undefined,
		);
		await client.deleteSession(id);
	});

	it("a wait-mode prompt whose caller aborts cancels its run, unless cancelOnAbort is false", async () => {
		const id = await gw.session();
		const runningRun = () => until(async () => (await client.getSession(id)).currentRunId) as Promise<string>;
		const idle = () => until(async () => (await client.getSession(id)).currentRunId === null);

		const settlesSince = (after: number) =>
			gw.registry
				.get(id)
				.events.since(after)
				.events.filter((e) => e.type === "agent_settled")
				.map((e) => JSON.parse(e.data.toString()) as { aborted: boolean });

		// Left going: the run ends on its own, not aborted.
		const keep = new AbortController();
		const kept = client.promptAndWait(id, { message: "slow: 30" }, { signal: keep.signal, cancelOnAbort: false });
		const keptRun = await runningRun();
		let before = gw.registry.get(id).events.lastSeq;
		keep.abort();
		await expect(kept).rejects.toThrow();
		await idle();
		expect(settlesSince(before)).toEqual([{ type: "agent_settled", aborted: false }]);
		expect(await client.cancelRun(id, keptRun).catch((e: { status: number }) => e.status)).toBe(409);

		// By default the caller's abort cancels the run.
		const controller = new AbortController();
		const waited = client.promptAndWait(id, { message: "slow: 600" }, { signal: controller.signal });
		const runId = await runningRun();
		before = gw.registry.get(id).events.lastSeq;
		controller.abort();
		await expect(waited).rejects.toThrow();
		await idle();
		expect(settlesSince(before)).toEqual([{ type: "agent_settled", aborted: true }]);
		expect(await client.cancelRun(id, runId).catch((e: { status: number }) => e.status)).toBe(409);
		await client.deleteSession(id);
	});

	it("lists sessions a page at a time, and allSessions() walks every page", async () => {
		const mine = [await gw.session(), await gw.session(), await gw.session()];
		const page = await client.listSessions({ limit: 1 });
		expect(page.sessions).toHaveLength(1);
		expect(page).toMatchObject({ hasMore: true, nextCursor: expect.any(String) });
		const listed: string[] = [];
		for await (const session of client.allSessions({ limit: 2 })) listed.push(session.id);
		expect(new Set(listed).size).toBe(listed.length);
		expect(listed.filter((id) => mine.includes(id))).toEqual(mine);
		expect((await client.listSessions({ status: "crashed" })).sessions).toEqual([]);
		for (const id of mine) await client.deleteSession(id);
	});

	it("a problem+json answer is thrown as a GatewayError with its code and detail", async () => {
		const missing = await client.getSession("ses_doesnotexist00").catch((e) => e);
		expect(missing).toBeInstanceOf(GatewayError);
		expect([missing.status, missing.code]).toEqual([404, "session_not_found"]);
		const wrong = new PiGateway({ baseUrl: gw.url, token: "not-the-token-0123456789" });
		const denied = await wrong.listSessions().catch((e) => e);
		expect([denied.status, denied.code, denied.message]).toEqual([
			401,
			"unauthorized",
			"HTTP 401 unauthorized: A valid bearer token is required (Authorization: Bearer …)",
		]);
		const invalid = await client.request("POST", "/v1/sessions", { body: { name: 42 as never } }).catch((e) => e);
		expect([invalid.status, invalid.code]).toEqual([400, "invalid_input"]);
		expect(invalid.problem.issues?.length).toBeGreaterThan(0);
	});

	it("an AbortSignal cancels a stream: the loop throws AbortError and the gateway lets go of the subscriber", async () => {
		const id = await gw.session();
		const controller = new AbortController();
		const seen: string[] = [];
		const loop = (async () => {
			for await (const event of client.events(id, { signal: controller.signal })) seen.push(event.type);
		})();
		await until(() => gw.registry.get(id).sseSubscribers === 1 && seen.length > 0);
		controller.abort();
		const error = await loop.catch((e) => e);
		expect(error?.name).toBe("AbortError");
		expect(seen).toEqual(["stream_open"]);
		await until(() => gw.registry.get(id).sseSubscribers === 0);
		// A long-poll is cancelled the same way.
		const waiting = new AbortController();
		const next = client.approvals.next({ sessionId: id, signal: waiting.signal });
		setTimeout(() => waiting.abort(), 100);
		expect((await next.catch((e) => e))?.name).toBe("AbortError");
		await client.deleteSession(id);
	});

	it("the workspace: write, list, read, changes, delete", async () => {
		const id = await gw.session();
		expect(await client.workspace.write(id, "notes/a.txt", "hello\n")).toMatchObject({ created: true });
		const listing = await client.workspace.list(id, "notes");
		expect(listing.entries.map((e) => [e.name, e.type])).toEqual([["a.txt", "file"]]);
		expect(await client.workspace.readText(id, "notes/a.txt")).toBe("hello\n");
		const changes = await client.workspace.changes(id);
		expect(changes.files.map((f) => [f.path, f.status])).toContainEqual(["notes/a.txt", "added"]);
		await client.workspace.delete(id, "notes/a.txt");
		const gone = await client.workspace.read(id, "notes/a.txt").catch((e) => e);
		expect(gone.status).toBe(404);
		await client.deleteSession(id);
	});
});
