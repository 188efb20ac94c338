import { mkdtempSync, rmSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { parseAllowHosts } from "../../src/net/egress-allow.ts";
import { closeEgressProxy, egressLimits, openEgressProxy } from "../../src/sessions/relay/egress-proxy.ts";

// The relay's lesson (~22,000 half-sent requests ran the gateway out of file descriptors) holds for
// the tools' egress proxy too: a session's proxy holds a bounded number of connections, tunnels
// included, refuses the next at once, and drops a request whose headers do not come.

let root: string;
let socket: string;
let echo: Server;
let echoPort: number;
const denials: unknown[] = [];

beforeAll(async () => {
	root = mkdtempSync(join(tmpdir(), "egress-limits-"));
	socket = join(root, "proxy.sock");
	echo = createServer((s) => s.pipe(s));
	await new Promise<void>((done) => echo.listen(0, "127.0.0.1", done));
	echoPort = (echo.address() as { port: number }).port;
	openEgressProxy(socket, parseAllowHosts([`127.0.0.1:${echoPort}`]), { denied: (d) => denials.push(d) });
});

afterAll(() => {
	closeEgressProxy(socket);
	echo.close();
	rmSync(root, { recursive: true, force: true });
});

const until = async (done: () => boolean) => {
	while (!done()) await new Promise((r) => setTimeout(r, 50));
};

/** A connection to the proxy that sends `text`; what it got and whether the proxy closed it. */
async function client(text: string) {
	const s: Socket = connect(socket);
	const state = { answer: "", closed: false, socket: s };
	s.on("data", (d: Buffer) => (state.answer += d.toString("utf8")));
	s.on("close", () => (state.closed = true));
	s.on("error", () => {});
	await new Promise<void>((resolve) => s.once("connect", () => resolve()));
	s.write(text);
	return state;
}

const tunnelTo = (port: number) => `CONNECT 127.0.0.1:${port} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`;

it("drops a request whose headers do not come", async () => {
	const half = await client(`CONNECT 127.0.0.1:${echoPort} HTTP/1.1\r\nHost: x\r\n`);
	await until(() => half.closed);
	// Node's answer to headers that did not come in time (not a refusal for the cap: that says nothing).
	expect(half.answer).toMatch(/^HTTP\/1\.1 408/);
}, 30_000);

it("holds a session's tunnels to the cap and refuses the next at once", async () => {
	const held = [];
	for (let i = 0; i < egressLimits.connections; i++) {
		const c = await client(tunnelTo(echoPort));
		await until(() => c.answer.includes("\r\n\r\n"));
		held.push(c);
	}
	expect(held.every((c) => c.answer.startsWith("HTTP/1.1 200"))).toBe(true);
	const extra = await client(tunnelTo(echoPort));
	await until(() => extra.closed);
	expect(extra.answer).toBe("");
	// A tunnel closed frees its slot.
	held.pop()?.socket.destroy();
	await new Promise((r) => setTimeout(r, 100));
	const again = await client(tunnelTo(echoPort));
	await until(() => again.answer.includes("\r\n\r\n"));
	again.socket.write("ping");
	await until(() => again.answer.endsWith("ping"));
	for (const c of [...held, again]) c.socket.destroy();
	expect(denials).toEqual([]);
}, 30_000);
