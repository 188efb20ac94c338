import { mkdtempSync, rmSync } from "node:fs";
import { type AddressInfo, connect, createServer as createNetServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { RelayPlan } from "../../src/sessions/relay/credentials.ts";
import { closeRelay, openRelay } from "../../src/sessions/relay/server.ts";

// A model's stream is one small chunk a token. The relay passed each on as it came, one chunk of
// its own answer apiece, through node:http's client (a parse, a stream push, an event and a write
// each): that cost a sandboxed pi's calls half a direct call's tokens/s (BENCHMARKS.md, "The model
// relay against a direct call"). It now hands on what one read of the provider's answer holds at
// once: the same bytes, in far fewer chunks.

const tokens = 2000;
/** The provider's stream, an event apiece: a text delta a token, the usage figure, the end. */
const events = [
	...Array.from(
		{ length: tokens },
		(_, i) => `data: ${JSON.stringify({ choices: [{ delta: { content: `w${i} ` } }] })}`,
	),
	`data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 7, completion_tokens: tokens } })}`,
	"data: [DONE]",
].map((event) => `${event}\n\n`);
const stream = events.join("");

let root: string;
let socket: string;
let upstream: Server;
const counted: number[] = [];
let sawHead: () => void;
const headSeen = new Promise<void>((resolve) => (sawHead = resolve));

beforeAll(async () => {
	root = mkdtempSync(join(tmpdir(), "relay-passthrough-"));
	socket = join(root, "relay.sock");
	// The provider's answer as it leaves a provider in a burst: the head, then (once it went through
	// the relay, which is then reading the answer as it comes) every event in a chunk of its own, all
	// in one write.
	upstream = createNetServer((conn) => {
		conn.once("data", async () => {
			conn.write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
			await headSeen;
			const chunks = events.map((e) => `${Buffer.byteLength(e).toString(16)}\r\n${e}\r\n`);
			conn.end(`${chunks.join("")}0\r\n\r\n`);
		});
	});
	await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
	const plan: RelayPlan = {
		routes: new Map([
			[
				"a",
				{
					provider: "a",
					upstream: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`,
					secrets: new Map(),
					costs: new Map(),
					keyHeaders: new Set(["authorization"]),
					apis: new Set(["openai-completions"]),
					queryKey: false,
				},
			],
		]),
		env: {},
		modelsJson: {},
		authJson: {},
	};
	openRelay(socket, plan, { refusal: () => undefined, counted: (t) => counted.push(t) });
});

afterAll(() => {
	closeRelay(socket);
	upstream.close();
	rmSync(root, { recursive: true, force: true });
});

/** The relay's answer as it came on the wire: its head, and its chunked body's chunks. */
function rawCall(): Promise<{ head: string; chunks: Buffer[] }> {
	const body = JSON.stringify({ model: "m", stream: true, stream_options: { include_usage: true }, messages: [] });
	return new Promise((resolve, reject) => {
		const parts: Buffer[] = [];
		const s = connect(socket);
		s.on("data", (d: Buffer) => {
			parts.push(d);
			if (Buffer.concat(parts).includes("\r\n\r\n")) sawHead();
		});
		s.on("error", reject);
		s.on("close", () => {
			const wire = Buffer.concat(parts);
			const end = wire.indexOf("\r\n\r\n");
			const chunks: Buffer[] = [];
			for (let at = end + 4; ; ) {
				const line = wire.indexOf("\r\n", at);
				const size = Number.parseInt(wire.toString("latin1", at, line), 16);
				if (!(size > 0)) break;
				chunks.push(wire.subarray(line + 2, line + 2 + size));
				at = line + 2 + size + 2;
			}
			resolve({ head: wire.toString("latin1", 0, end), chunks });
		});
		s.write(
			`POST /a/v1/chat/completions HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\n` +
				`Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
		);
	});
}

it("passes a provider's burst of small chunks on whole, in a few large chunks, and counts its figures", async () => {
	const { head, chunks } = await rawCall();
	expect(head).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
	expect(head.toLowerCase()).toContain("transfer-encoding: chunked");
	expect(Buffer.concat(chunks).toString("utf8")).toBe(stream);
	// One chunk a token before; one a read of the provider's answer now (160 KB: a handful of reads).
	expect(chunks.length).toBeLessThan(tokens / 10);
	await new Promise((resolve) => setTimeout(resolve, 0));
	expect(counted).toEqual([7 + tokens]);
});
