/**
 * Benchmark 11: where the slow events of a paced run come from. The 1k events/s run of table 1,
 * through the pipe and through the gateway, with each event's emit and receive times kept, and
 * beside it what the machine did meanwhile:
 * - the gateway's garbage collections (bench/gc-log.cjs, on the stub's clock);
 * - how long each process of the chain (stub, gateway, client) waited for a CPU
 *   (/proc/<pid>/schedstat: time runnable but not running);
 * - with `perf` on PATH (root, or perf_event_paranoid ≤ 1): every context switch of the machine
 *   (`perf record -e sched:sched_switch,sched:sched_wakeup`, CLOCK_MONOTONIC), so each slow event
 *   is matched to a wait of one of the chain's threads, and the waits to what held the CPUs.
 * An event is slow past 2 ms (the target's p99).
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runqueueWaitMs, viaGateway, viaPipe } from "./events.ts";
import { root, startGatewayProcess, stubPi } from "./lib.ts";

const slowMs = 2;

/** One delivered event: when the stub stamped it and how long it took to reach the client (ns). */
export type Delivery = [emittedAt: number, latencyNs: number];

/** The stub pi the gateway started: the process running stub-pi.mjs under the gateway's tree. */
function stubUnder(gatewayPid: number): number | undefined {
	const parentOf = (pid: number) => {
		const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
		return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
	};
	for (const entry of readdirSync("/proc")) {
		const pid = Number(entry);
		if (!Number.isInteger(pid)) continue;
		try {
			const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
			// The node running the stub itself, not bwrap or a shell around it.
			// (a sandboxed one runs from the sealed copy, node-<ino>-<size>-<mtime>: sealed-node.ts).
			if (!/(^|\/)node[^/]*$/.test(cmd[0] ?? "") || !cmd.some((a) => a.endsWith("stub-pi.mjs"))) continue;
			for (let p = parentOf(pid); p > 1; p = parentOf(p)) if (p === gatewayPid) return pid;
		} catch {
			// gone meanwhile
		}
	}
	return undefined;
}

function perfAvailable(): boolean {
	const probe = spawnSync("perf", ["--version"], { encoding: "utf8" });
	if (probe.status !== 0) return false;
	const paranoid = Number(readFileSync("/proc/sys/kernel/perf_event_paranoid", "utf8").trim());
	return process.getuid?.() === 0 || paranoid <= 1;
}

/** A system-wide record of context switches, on CLOCK_MONOTONIC (the events' clock). */
async function startPerf(file: string): Promise<ChildProcess> {
	const perf = spawn(
		"perf",
		["record", "-a", "-k", "CLOCK_MONOTONIC", "-e", "sched:sched_switch", "-e", "sched:sched_wakeup", "-o", file],
		{ stdio: ["ignore", "ignore", "pipe"] },
	);
	// Recording once the file has its header.
	for (let i = 0; i < 100 && !existsSync(file); i++) await new Promise((r) => setTimeout(r, 20));
	await new Promise((r) => setTimeout(r, 200));
	return perf;
}

/** A thread's time on a CPU or waiting for one (ns, CLOCK_MONOTONIC). */
interface Span {
	start: number;
	end: number;
	pid: number;
	tid: number;
	task: string;
}

/** `perf sched timehist`: for each switch-out, the run before it and the wait for a CPU before that. */
function readSwitches(file: string): { runs: Span[]; waits: Span[] } {
	const out = spawnSync("perf", ["sched", "timehist", "-i", file], { encoding: "utf8", maxBuffer: 1 << 30 }).stdout;
	const runs: Span[] = [];
	const waits: Span[] = [];
	for (const line of out.split("\n")) {
		const m = /^\s*([\d.]+)\s+\[\d+\]\s+(.+?)\[(\d+)(?:\/(\d+))?\]\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$/.exec(line);
		if (!m) continue;
		const end = Number(m[1]) * 1e9;
		const tid = Number(m[3]);
		const pid = Number(m[4] ?? m[3]);
		const run = Number(m[7]) * 1e6;
		const delay = Number(m[6]) * 1e6;
		const span = { pid, tid, task: (m[2] as string).trim() };
		runs.push({ ...span, start: end - run, end });
		if (delay > 0) waits.push({ ...span, start: end - run - delay, end: end - run });
	}
	return { runs, waits };
}

const overlap = (a0: number, a1: number, b0: number, b1: number) => Math.max(0, Math.min(a1, b1) - Math.max(a0, b0));

interface Chain {
	gateway?: number;
	stub: number;
	client: number;
}

/** What each slow event coincides with, and who held the CPUs while the chain's threads waited. */
function attribute(
	deliveries: Delivery[],
	chain: Chain,
	gcs: [number, number][],
	perf?: ReturnType<typeof readSwitches>,
) {
	const slow = deliveries.filter(([, ns]) => ns > slowMs * 1e6);
	const main = new Set([chain.stub, chain.client, ...(chain.gateway ? [chain.gateway] : [])]);
	const waits = perf?.waits.filter((w) => main.has(w.tid)) ?? [];
	let duringGc = 0;
	let waited = 0;
	const holders = new Map<string, number>();
	const name = (span: Span) => {
		const role =
			span.pid === chain.gateway
				? "gateway"
				: span.pid === chain.stub
					? "stub"
					: span.pid === chain.client
						? "client"
						: undefined;
		if (role) return span.tid === span.pid ? `${role} (main thread)` : `${role} (V8/libuv helper threads)`;
		return span.task === "<idle>" ? "idle" : `other: ${span.task.replace(/\[.*$/, "")}`;
	};
	for (const [at, ns] of slow) {
		const end = at + ns;
		if (gcs.some(([start, ms]) => overlap(start, start + ms * 1e6, at, end) > 0)) duringGc++;
		const own = waits.filter((w) => overlap(w.start, w.end, at, end) >= 1e6);
		if (own.length > 0) waited++;
		for (const w of own)
			for (const r of perf?.runs ?? []) {
				const t = overlap(r.start, r.end, Math.max(w.start, at), Math.min(w.end, end));
				if (t > 0) holders.set(name(r), (holders.get(name(r)) ?? 0) + t / 1e6);
			}
	}
	return { slow: slow.length, duringGc, waited, holders };
}

function figures(deliveries: Delivery[]) {
	const ms = deliveries.map(([, ns]) => ns / 1e6).sort((a, b) => a - b);
	const at = (q: number) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))] ?? Number.NaN;
	return { events: ms.length, p50: at(0.5), p99: at(0.99), p999: at(0.999), max: ms.at(-1) ?? Number.NaN };
}

export async function latencyTail(
	rate: number,
	seconds: number,
	warmUpMs: number,
	usePerf = perfAvailable(),
	warmUpFlood = 3000,
) {
	const dir = mkdtempSync(join(tmpdir(), "pi-bench-tail-"));
	const gcLog = join(dir, "gc.log");
	const gateway = await startGatewayProcess(["--pi-command", `${process.execPath} ${stubPi}`], {
		nodeArgs: ["--require", join(root, "bench", "gc-log.cjs")],
		env: { GC_LOG: gcLog },
	});
	const spec = { count: rate * seconds, rate, size: 200 };
	const rows: Record<string, string | number>[] = [];
	const who: Record<string, string | number>[] = [];
	try {
		// Warm, as table 1: a flood and a paced run first, not counted.
		await viaGateway(gateway, { count: warmUpFlood, rate: 0, size: 200 });
		await viaGateway(gateway, { count: warmUpMs, rate: 1000, size: 200 });
		for (const path of ["pipe", "gateway"] as const) {
			const perfFile = join(dir, `${path}.perf`);
			let measured: { deliveries: Delivery[]; chain: Chain; waits: Record<string, number> };
			const perf = usePerf ? await startPerf(perfFile) : undefined;
			try {
				if (path === "pipe") {
					const run = await viaPipe(spec);
					measured = {
						deliveries: run.deliveries,
						chain: { stub: run.stubPid, client: process.pid },
						waits: { client: run.clientWaitMs },
					};
				} else {
					let stub: number | undefined;
					const before = { gateway: 0, client: 0 };
					const run = await viaGateway(gateway, spec, {
						beforeEmit: () => {
							stub = stubUnder(gateway.pid);
							before.gateway = runqueueWaitMs(gateway.pid);
							before.client = runqueueWaitMs(process.pid);
						},
					});
					if (stub === undefined) throw new Error("the gateway's stub pi was not found");
					const deliveries = run.perSubscriber[0]?.deliveries ?? [];
					measured = {
						deliveries,
						chain: { gateway: gateway.pid, stub, client: process.pid },
						waits: {
							gateway: runqueueWaitMs(gateway.pid) - before.gateway,
							client: runqueueWaitMs(process.pid) - before.client,
						},
					};
				}
			} finally {
				if (perf) {
					perf.kill("SIGINT");
					if (perf.exitCode === null) await once(perf, "exit");
				}
			}
			const gcs: [number, number][] =
				path === "gateway" && existsSync(gcLog)
					? readFileSync(gcLog, "utf8")
							.trim()
							.split("\n")
							.map((l) => l.split(" "))
							.map(([start, ms]) => [Number(start), Number(ms)])
					: [];
			const switches = perf ? readSwitches(perfFile) : undefined;
			const f = figures(measured.deliveries);
			const a = attribute(measured.deliveries, measured.chain, gcs, switches);
			rows.push({
				path,
				events: f.events,
				"p50 ms": f.p50,
				"p99 ms": f.p99,
				"p99.9 ms": f.p999,
				"max ms": f.max,
				[`events > ${slowMs} ms`]: a.slow,
				"… during a gateway GC": path === "gateway" ? a.duringGc : "-",
				"… while a thread of the chain waited ≥ 1 ms for a CPU": switches ? a.waited : "no perf",
				"gateway waited for a CPU ms/s": path === "gateway" ? (measured.waits.gateway ?? 0) / seconds : "-",
				"client waited for a CPU ms/s": (measured.waits.client ?? 0) / seconds,
			});
			const total = [...a.holders.values()].reduce((x, y) => x + y, 0);
			for (const [task, ms] of [...a.holders.entries()].sort((x, y) => y[1] - x[1]).slice(0, 6))
				who.push({
					path,
					"on the CPUs while the chain waited": task,
					ms,
					share: `${((ms / total) * 100).toFixed(0)} %`,
				});
		}
	} finally {
		await gateway.stop();
		rmSync(dir, { recursive: true, force: true });
	}
	return { rows, who };
}
