import { execFileSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
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

/**
 * `n` create/delete cycles in `lanes` loops side by side: a cycle mostly waits (bwrap, pi's
 * startup answer, the snapshot's gits, the child's exit), so four at a time took 1.6-3 times less
 * wall time than one after another (alternated in one run on a busy machine). Every session is
 * gone when it returns, so a sample taken between two calls sees the same settled state as before.
 */
async function cycles(n: number, lanes = 4) {
	let next = 0;
	const lane = async () => {
		while (next < n) {
			const i = next++;
			const id = await gw.session();
			const deleted = await gw.api(`/v1/sessions/${id}`, { method: "DELETE" });
			if (deleted.status !== 204) throw new Error(`cycle ${i}: DELETE ${deleted.status}`);
		}
	};
	await Promise.all(Array.from({ length: lanes }, lane));
}

beforeAll(async () => {
	gw = await startTestGateway({ piCommand: ["/bin/sh", join(fixtures, "stub-pi.sh")] });
});
afterAll(() => gw?.stop());

// Each cycle starts a bubblewrap sandbox too (about 30 ms a cycle alone, more on a busy machine),
// and its session's first snapshot, which the DELETE stops (it waited for it: 1,700 cycles took
// 240 s here before, about 140 ms a cycle; 120 ms in a CI run, one after another).
it("create/delete cycles leave fds, child processes and memory flat", { timeout: 480_000 }, async () => {
	// Warm-up: JIT, connection pool, SQLite caches and the first heap growth happen here.
	await cycles(200);
	const batch = 500;
	const samples = [{ fds: fds(), children: children(), ...memory() }];
	const started = Date.now();
	for (let i = 0; i < 3; i++) {
		await cycles(batch);
		samples.push({ fds: fds(), children: children(), ...memory() });
	}
	const took = Date.now() - started;
	const mib = (n: number) => (n / 2 ** 20).toFixed(2);
	const growth = samples.slice(1).map((s, i) => s.heapUsed - (samples[i]?.heapUsed ?? 0));
	console.log(
		`${3 * batch} cycles in ${took} ms; fds ${samples.map((s) => s.fds).join("→")}, ` +
			`children ${samples.map((s) => s.children).join("→")}, rss ${samples.map((s) => mib(s.rss)).join("→")} MiB, ` +
			`heap growth per batch ${growth.map(mib).join(", ")} MiB`,
	);
	expect(gw.registry.size).toBe(0);
	// Each DELETE lands while its session's first snapshot runs (four gits): the snapshot is stopped
	// and its repository removed, none outlives its session.
	const snapshots = join(gw.config.dataDir, "snapshots");
	expect(existsSync(snapshots) ? readdirSync(snapshots) : []).toEqual([]);
	for (const s of samples) expect(s.children).toBe(0);
	const first = samples[0];
	const last = samples.at(-1);
	if (!first || !last) throw new Error("no samples");
	// Keep-alive sockets come and go; a leak would be ~3 fds (pipes) per cycle, i.e. thousands.
	expect(Math.abs(last.fds - first.fds)).toBeLessThanOrEqual(4);
	// A leak grows the heap in every batch; noise (GC timing, a busy machine, lazily grown
	// caches) shows in one batch and not the next, either way. So the middle per-batch growth is
	// the figure: a leak of 4 KiB per session is 2 MiB per batch in each of them, and fails (checked
	// by injecting one: 5 KiB per cycle gave 2.6–3.3 MiB per batch; without it, -0.5–1.5 MiB). Not
	// the smallest: the first batch after the warm-up now shrinks the heap by 2.4–2.7 MiB (a CI run
	// one after another too: -2.64, 0.75, 0.65), which hid that leak (-0.17, 3.19, 3.48 MiB).
	expect(growth.toSorted((a, b) => a - b)[1]).toBeLessThan(1.5 * 2 ** 20);
	expect(last.rss - first.rss).toBeLessThan(48 * 2 ** 20);
});
