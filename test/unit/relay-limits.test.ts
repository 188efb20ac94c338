import { mkdtempSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { RelayPlan } from "../../src/sessions/relay/credentials.ts";
import { closeRelay, openRelay, relayLimits } from "../../src/sessions/relay/server.ts";

// One agent held ~22,000 half-sent requests open on its relay's socket: the gateway ran out of file
// descriptors and other principals' creates failed. A session's relay holds a few connections at
// most, refuses the next at once, and drops a request whose headers do not come.

let root: string;
let socket: string;
const plan: RelayPlan = { routes: new Map(), env: {}, modelsJson: {}, authJson: {} };

beforeAll(() => {
	root = mkdtempSync(join(tmpdir(), "relay-limits-"));
	socket = join(root, "relay.sock");
	openRelay(socket, plan, { refusal: () => undefined, counted: () => {} });
});

afterAll(() => {
	closeRelay(socket);
	rmSync(root, { recursive: true, force: true });
});

/** A connection that sends half a request's headers; `closed` turns true when the relay ends it. */
async function halfSent(): Promise<{ socket: Socket; closed: () => boolean; answer: () => string }> {
	const s = connect(socket);
	let closed = false;
	let answer = "";
	s.on("data", (d: Buffer) => (answer += d.toString("utf8")));
	s.on("close", () => (closed = true));
	s.on("error", () => {});
	await new Promise<void>((resolve) => s.once("connect", () => resolve()));
	s.write("POST /a/chat/completions HTTP/1.1\r\nHost: relay\r\n");
	return { socket: s, closed: () => closed, answer: () => answer };
}

const until = async (done: () => boolean) => {
	while (!done()) await new Promise((r) => setTimeout(r, 50));
};

it("holds a session's connections to a few, refuses the next at once, and drops half-sent headers", async () => {
	const held: Awaited<ReturnType<typeof halfSent>>[] = [];
	for (let i = 0; i < relayLimits.connections; i++) held.push(await halfSent());
	const extra = await halfSent();
	await until(extra.closed);
	expect(extra.answer()).toBe("");
	expect(held.every((c) => !c.closed())).toBe(true);
	// The held ones never finish their headers: the relay drops them.
	await until(() => held.every((c) => c.closed()));
	// And serves again.
	const again = await halfSent();
	again.socket.write("\r\n");
	await until(() => again.answer().includes("\r\n\r\n"));
	expect(again.answer()).toMatch(/^HTTP\/1\.1 404/);
	again.socket.destroy();
}, 30_000);
