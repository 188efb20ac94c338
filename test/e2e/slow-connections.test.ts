import { readdirSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { noPool, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { readFrames } from "../helpers/sse.ts";

// Issue 10 item 11: thousands of unauthenticated connections that never finish their headers
// must not lock real clients out. Loopback only, and bounded (2,000 slow connections).
const token = "slowloris-token-0123456789";
const slow = 2000;
let gw: TestGateway;
const sockets: Socket[] = [];

beforeAll(async () => {
	gw = await startTestGateway({
		...noPool,
		token,
		maxConnections: 500,
		maxHalfOpenConnections: 200,
		headersTimeoutMs: 1000,
		requestTimeoutMs: 1500,
		sseHeartbeatMs: 200,
	});
});
afterAll(async () => {
	for (const s of sockets) s.destroy();
	await gw?.stop();
});

const fds = () => readdirSync("/proc/self/fd").length;

/** A client that starts a request and never finishes its headers. */
function slowClient(url: URL): Promise<Socket> {
	return new Promise((resolve) => {
		const socket = connect(Number(url.port), url.hostname, () => {
			socket.write(`GET /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: `);
			resolve(socket);
		});
		socket.on("error", () => resolve(socket));
		sockets.push(socket);
	});
}

describe("item 11: slowloris", () => {
	it(`${slow} half-open connections: the gateway holds a bounded number, and /healthz and a prompt are still served`, async () => {
		const url = new URL(gw.url);
		const fdsBefore = fds();
		for (let i = 0; i < slow; i += 100) {
			await Promise.all(Array.from({ length: 100 }, () => slowClient(url)));
		}
		const guard = gw.connections as TestGateway["connections"] | undefined;
		const held = { open: guard?.open, halfOpen: guard?.halfOpen, evicted: guard?.evicted };
		const fdsDuring = fds() - fdsBefore;
		console.log(
			`slowloris: ${slow} slow connections opened; gateway holds ${held.open} (${held.halfOpen} half-open), evicted ${held.evicted}; process fds +${fdsDuring} (client and server ends)`,
		);
		// One fd per client end, plus the server ends the gateway kept: at most its cap, not all of them.
		expect(fdsDuring).toBeLessThanOrEqual(slow + 500 + 50);
		expect(held.halfOpen).toBeLessThanOrEqual(200);
		expect(held.open).toBeLessThanOrEqual(500);

		const health = await fetch(`${gw.url}/healthz`);
		expect(health.status).toBe(200);
		const id = await gw.session({ name: "under-siege" });
		const run = await gw.api(`/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			json: { message: "echo: still served" },
		});
		expect(run.status).toBe(200);
		expect(run.body.text).toBe("still served");
		// The survivors of eviction run out of time by themselves (headersTimeout).
		await until(() => (guard?.halfOpen ?? 0) < 10, 15_000);
		for (const s of sockets) s.destroy();
	});

	it("an event stream outlives the header and request timeouts", async () => {
		const id = await gw.session({ name: "streamer" });
		const controller = new AbortController();
		const res = await fetch(`${gw.url}/v1/sessions/${id}/events`, {
			headers: { authorization: `Bearer ${token}` },
			signal: controller.signal,
		});
		expect(res.status).toBe(200);
		const frames = readFrames(res);
		const opened = Date.now();
		// Heartbeats are comments (readFrames skips them): a prompt after both timeouts ran out
		// must still arrive on this stream.
		await until(() => Date.now() - opened > 2 * 1500, 10_000);
		await gw.api(`/v1/sessions/${id}/prompt`, { method: "POST", json: { message: "echo: late" } });
		for (;;) {
			const { value, done } = await frames.next();
			expect(done).toBeFalsy();
			if (value?.event === "agent_settled") break;
		}
		controller.abort();
	});

	it("past --max-connections with every slot holding a live request, a newcomer gets a raw 503 problem", async () => {
		const small = await startTestGateway({ ...noPool, token, maxConnections: 3 });
		const controllers: AbortController[] = [];
		try {
			for (let i = 0; i < 3; i++) {
				const ac = new AbortController();
				controllers.push(ac);
				const res = await fetch(`${small.url}/v1/events`, {
					headers: { authorization: `Bearer ${token}` },
					signal: ac.signal,
				});
				expect(res.status).toBe(200);
			}
			const over = await fetch(`${small.url}/healthz`);
			expect(over.status).toBe(503);
			expect(over.headers.get("content-type")).toBe("application/problem+json");
			expect(((await over.json()) as { code: string }).code).toBe("too_many_connections");
			expect(small.connections.refused).toBeGreaterThan(0);
		} finally {
			for (const ac of controllers) ac.abort();
			await small.stop();
		}
	});
});
