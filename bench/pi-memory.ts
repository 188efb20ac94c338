/**
 * Benchmark 9: what a live session costs in pi's own memory, under several Node option sets for
 * the pi child (--pi-node-options). pi is spawned as the gateway spawns it (node, the options, the
 * bundled cli, the demo model) and read from its pipe, so the figures are pi's alone. Each sample is
 * a fresh pi: idle after start, one short prompt, idle, a long run with tool calls, idle. The option
 * sets take turns sample by sample, so the load of a shared machine falls on all of them alike.
 */
import type { ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { now, percentile, readPipe, spawnDemoPi } from "./lib.ts";

export const optionSets: { label: string; options: string }[] = [
	{ label: "defaults", options: "" },
	{ label: "semi=1", options: "--max-semi-space-size=1" },
	{ label: "semi=2 (the gateway's default)", options: "--max-semi-space-size=2" },
	{ label: "semi=4", options: "--max-semi-space-size=4" },
	{ label: "optimize-for-size", options: "--optimize-for-size" },
	{ label: "semi=1 + optimize-for-size", options: "--max-semi-space-size=1 --optimize-for-size" },
	{
		label: "semi=1 + optimize-for-size + old=256",
		options: "--max-semi-space-size=1 --optimize-for-size --max-old-space-size=256",
	},
	{ label: "jitless", options: "--jitless" },
];

export interface PiMemoryRun {
	/** How long a pi is left alone before its memory is read: what an idle session looks like. */
	idleMs: number;
	/** The long run's `count:`. */
	longCount: number;
}
/** The figures' run; the smoke pass idles 0.3 s and runs `count: 200` (its figures are not kept). */
export const fullPiMemoryRun: PiMemoryRun = { idleMs: 2000, longCount: 2000 };
const toolCalls = [
	"bash: ls -la /",
	"bash: seq 1 2000",
	"bash: cat /proc/self/status",
	"bash: find /usr/lib -maxdepth 2",
];

interface Memory {
	rss: number;
	pss: number;
}

/** RSS and PSS in MiB (PSS when smaps_rollup is readable, else NaN). */
function memoryOf(pid: number): Memory {
	const status = readFileSync(`/proc/${pid}/status`, "utf8");
	const rss = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN) / 1024;
	let pss = Number.NaN;
	try {
		pss = Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"))?.[1] ?? Number.NaN) / 1024;
	} catch {}
	return { rss, pss };
}

/** CPU time (user + system) of a process so far, in ms: less moved by a busy machine than wall time. */
function cpuMsOf(pid: number): number {
	const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
	const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
	return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

function peakOf(pid: number): number {
	return Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? Number.NaN) / 1024;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ms = (ns: bigint) => Number(ns) / 1e6;

interface Sample {
	startMs: number;
	startCpuMs: number;
	runsCpuMs: number;
	idleStart: Memory;
	firstTokenMs: number;
	idlePrompt: Memory;
	longRunMs: number;
	toolsMs: number;
	idleLong: Memory;
	peakRss: number;
}

let nextId = 0;
/** Sends one prompt and resolves at agent_settled with the time to the first text delta and the total. */
async function prompt(child: ChildProcess, message: string): Promise<{ firstMs: number; totalMs: number }> {
	const t0 = now();
	let first = 0n;
	let refused: string | undefined;
	const done = readPipe(child, (r) => {
		if (!first && r.type === "message_update" && r.assistantMessageEvent?.type === "text_delta") first = now();
		if (r.type === "response" && r.success === false) refused = String(r.error);
		return r.type === "agent_settled" || refused !== undefined;
	});
	child.stdin?.write(`${JSON.stringify({ id: String(++nextId), type: "prompt", message })}\n`);
	await done;
	if (refused !== undefined) throw new Error(`pi refused ${JSON.stringify(message)}: ${refused}`);
	return { firstMs: ms(first - t0), totalMs: ms(now() - t0) };
}

async function sample(options: string, { idleMs, longCount }: PiMemoryRun): Promise<Sample> {
	const child = spawnDemoPi(options.split(" ").filter(Boolean));
	const pid = child.pid as number;
	try {
		const t0 = now();
		const ready = readPipe(child, (r) => r.type === "response");
		child.stdin?.write(`${JSON.stringify({ id: "0", type: "get_state" })}\n`);
		await ready;
		const startMs = ms(now() - t0);
		const startCpuMs = cpuMsOf(pid);
		await sleep(idleMs);
		const idleStart = memoryOf(pid);
		const short = await prompt(child, "count: 20");
		await sleep(idleMs);
		const idlePrompt = memoryOf(pid);
		const cpuBeforeRuns = cpuMsOf(pid);
		const long = await prompt(child, `count: ${longCount}`);
		let toolsMs = 0;
		for (const call of toolCalls) toolsMs += (await prompt(child, call)).totalMs;
		const runsCpuMs = cpuMsOf(pid) - cpuBeforeRuns;
		await sleep(idleMs);
		return {
			startMs,
			startCpuMs,
			runsCpuMs,
			idleStart,
			firstTokenMs: short.firstMs,
			idlePrompt,
			longRunMs: long.totalMs,
			toolsMs,
			idleLong: memoryOf(pid),
			peakRss: peakOf(pid),
		};
	} finally {
		child.stdin?.end();
		if (child.exitCode === null) await new Promise((r) => child.once("exit", r));
	}
}

/** "median (min–max)" of the samples. */
function spread(values: number[], digits = 0): string {
	const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
	if (sorted.length === 0) return "n/a";
	const f = (v: number) => v.toFixed(digits);
	const median = percentile(sorted, 50);
	return sorted.length === 1 ? f(median) : `${f(median)} (${f(sorted[0] as number)}–${f(sorted.at(-1) as number)})`;
}

const median = (values: number[]) =>
	percentile(
		[...values].sort((a, b) => a - b),
		50,
	);

export async function piMemory(samples: number, sets = optionSets, run = fullPiMemoryRun) {
	const results = new Map<string, Sample[]>(sets.map((s) => [s.label, []]));
	for (let i = 0; i < samples; i++)
		for (const set of sets) {
			try {
				results.get(set.label)?.push(await sample(set.options, run));
			} catch (error) {
				console.error(`pi-memory: ${set.label}: ${(error as Error).message}`);
			}
		}
	const base = results.get(sets[0]?.label ?? "") ?? [];
	const ratio = (values: number[], baseValues: number[]) =>
		baseValues.length ? (median(values) / median(baseValues)).toFixed(2) : "n/a";
	const pssReadable = existsSync("/proc/self/smaps_rollup");
	const rows = sets.map(({ label, options }) => ({ label, options, s: results.get(label) ?? [] }));
	const memory = rows.map(({ label, options, s }) => ({
		options: label,
		"node flags": options || "(none)",
		samples: s.length,
		"RSS idle after start MiB": spread(s.map((x) => x.idleStart.rss)),
		"RSS idle after 1 prompt MiB": spread(s.map((x) => x.idlePrompt.rss)),
		"RSS idle after long run MiB": spread(s.map((x) => x.idleLong.rss)),
		"peak RSS MiB": spread(s.map((x) => x.peakRss)),
		...(pssReadable
			? {
					"PSS idle after 1 prompt MiB": spread(s.map((x) => x.idlePrompt.pss)),
					"PSS idle after long run MiB": spread(s.map((x) => x.idleLong.pss)),
				}
			: {}),
	}));
	const perGiB = (mib: number[]) => (mib.length ? (1024 / median(mib)).toFixed(1) : "n/a");
	const cost = rows.map(({ label, s }) => ({
		options: label,
		"start ms": spread(s.map((x) => x.startMs)),
		"first token ms": spread(
			s.map((x) => x.firstTokenMs),
			1,
		),
		[`count: ${run.longCount} ms`]: spread(s.map((x) => x.longRunMs)),
		[`${toolCalls.length} bash calls ms`]: spread(s.map((x) => x.toolsMs)),
		"pi CPU ms, start": spread(s.map((x) => x.startCpuMs)),
		"pi CPU ms, long run + bash calls": spread(s.map((x) => x.runsCpuMs)),
		"CPU of runs / defaults": ratio(
			s.map((x) => x.runsCpuMs),
			base.map((x) => x.runsCpuMs),
		),
		"RSS after long run / defaults": ratio(
			s.map((x) => x.idleLong.rss),
			base.map((x) => x.idleLong.rss),
		),
		"first token / defaults": ratio(
			s.map((x) => x.firstTokenMs),
			base.map((x) => x.firstTokenMs),
		),
		"run / defaults": ratio(
			s.map((x) => x.longRunMs + x.toolsMs),
			base.map((x) => x.longRunMs + x.toolsMs),
		),
		"sessions per GiB (RSS after long run)": perGiB(s.map((x) => x.idleLong.rss)),
		...(pssReadable ? { "sessions per GiB (PSS after long run)": perGiB(s.map((x) => x.idleLong.pss)) } : {}),
	}));
	return { memory, cost };
}
