import { execFileSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { fixtures, startTestGateway, type TestGateway } from "../helpers/gateway.ts";

// 1,000 create/delete cycles over real HTTP. The pi here is stub-pi.sh, a shell loop that answers
// get_state: what is measured is the gateway's own bookkeeping per session (pipes, timers,
// listeners, registry and store entries), and real pi (0.3 s, 110 MB each) would only make it slow.
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;
let gw: TestGateway;

const fds = () => readdirSync("/proc/self/fd").length;
const children = () => {
	try {
		return execFileSync("pgrep", ["-P", String(process.pid)], { encoding: "utf8" })
			.trim()
			.split("\n").length;
	} catch {
		return 0; // pgrep exits 1 when there are none
	}
};
const memory = () => {
	gc();
	gc();
	const { rss, heapUsed } = process.memoryUsage();
	return { rss, heapUsed };
};

async function cycles(n: number) {
	for (let i = 0; i < n; i++) {
		const id = await gw.session();
		const deleted = await gw.api(`/v1/sessions/${id}`, { method: "DELETE" });
		if (deleted.status !== 204) throw new Error(`cycle ${i}: DELETE ${deleted.status}`);
	}
}

beforeAll(async () => {
	gw = await startTestGateway({ piCommand: ["/bin/sh", join(fixtures, "stub-pi.sh")] });
});
afterAll(() => gw?.stop());

it("1,000 create/delete cycles leave fds, child processes and memory flat", { timeout: 60_000 }, async () => {
	// Warm-up: JIT, connection pool, SQLite caches and the first heap growth happen here.
	await cycles(100);
	const before = { fds: fds(), children: children(), ...memory() };
	const started = Date.now();
	await cycles(1000);
	const took = Date.now() - started;
	const after = { fds: fds(), children: children(), ...memory() };
	console.log(
		`1000 cycles in ${took} ms; fds ${before.fds}→${after.fds}, children ${before.children}→${after.children}, ` +
			`rss ${(before.rss / 2 ** 20).toFixed(1)}→${(after.rss / 2 ** 20).toFixed(1)} MiB, ` +
			`heap ${(before.heapUsed / 2 ** 20).toFixed(1)}→${(after.heapUsed / 2 ** 20).toFixed(1)} MiB`,
	);
	expect(gw.registry.size).toBe(0);
	expect(after.children).toBe(0);
	expect(before.children).toBe(0);
	// Keep-alive sockets come and go; a leak would be ~3 fds (pipes) per cycle, i.e. thousands.
	expect(Math.abs(after.fds - before.fds)).toBeLessThanOrEqual(4);
	// A leak of even 5 KiB per session would show as 5 MiB of heap.
	expect(after.heapUsed - before.heapUsed).toBeLessThan(3 * 2 ** 20);
	expect(after.rss - before.rss).toBeLessThan(32 * 2 ** 20);
});
