/**
 * Benchmarks 1–3: what the gateway adds between pi's stdout and a client, with a stub pi that
 * emits timestamped events. Baseline: a client reading the stub's stdout pipe directly (split
 * on LF + JSON.parse, as any pi client must). Measured: SSE clients of the gateway.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
	api,
	type GatewayProcess,
	now,
	openSse,
	procStats,
	readPipe,
	readSse,
	settledMemory,
	spawnStub,
	stubPi,
	summarize,
} from "./lib.ts";

const benchDir = dirname(fileURLToPath(import.meta.url));

export interface EmitSpec {
	count: number;
	rate: number;
	size: number;
}

/**
 * Latencies (ns) and bytes of one emission read straight from the pipe; `deliveries` keeps each
 * event's stamp beside its latency, and `clientWaitMs` is how long this process waited for a CPU.
 */
export async function viaPipe(spec: EmitSpec) {
	const child = spawnStub();
	const latencies: number[] = [];
	const deliveries: [emittedAt: number, latencyNs: number][] = [];
	// Ready first, so the clock measures events, not the stub's start.
	const ready = readPipe(child, (record) => record.type === "response");
	child.stdin?.write(`${JSON.stringify({ id: "0", type: "get_state" })}\n`);
	await ready;
	const waitedBefore = runqueueWaitMs(process.pid);
	const started = now();
	const done = readPipe(child, (record) => {
		if (record.type === "message_update") {
			const t = BigInt(record.t);
			const latency = Number(now() - t);
			latencies.push(latency);
			deliveries.push([Number(t), latency]);
		}
		return record.type === "agent_settled";
	});
	child.stdin?.write(`${JSON.stringify({ id: "1", type: "emit", ...spec })}\n`);
	const bytes = await done;
	const seconds = Number(now() - started) / 1e9;
	const clientWaitMs = runqueueWaitMs(process.pid) - waitedBefore;
	child.stdin?.end();
	await new Promise((r) => child.once("exit", r));
	return { latencies, deliveries, bytes, seconds, stubPid: child.pid as number, clientWaitMs };
}

/** How long a process's main thread has waited for a CPU (runnable, not running), in ms. */
export function runqueueWaitMs(pid: number): number {
	return Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[1]) / 1e6;
}

/**
 * The same emission through bench/minimal-relay.ts (its own process, read by the same SSE client
 * code as the gateway): what any Node SSE relay costs on this machine, the ceiling of the ratio.
 * `floods` emissions go through one relay process and one stream, each measured: the first is a
 * cold relay (it pays for compiling), the later ones are as warm as the gateway it is compared with.
 */
export async function viaMinimalRelay(mode: "node-http" | "hono", spec: EmitSpec, floods = 2) {
	const relay = spawn(process.execPath, [join(benchDir, "minimal-relay.ts"), stubPi, mode], {
		stdio: ["ignore", "pipe", "inherit"],
	});
	try {
		const port = await new Promise<number>((resolve, reject) => {
			relay.stdout?.once("data", (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
			relay.once("exit", (code) => reject(new Error(`minimal relay exited with ${code}`)));
		});
		const res = await openSse(`http://127.0.0.1:${port}/events`);
		let delivered = 0;
		let settled = 0;
		let flooded: (() => void) | undefined;
		const done = readSse(res, (_event, data) => {
			const record = JSON.parse(data);
			if (record.type === "message_update") delivered++;
			if (record.type !== "agent_settled") return false;
			flooded?.();
			return ++settled === floods;
		});
		const measured: { seconds: number; cpuMicros: number }[] = [];
		for (let flood = 0; flood < floods; flood++) {
			const settledNow = new Promise<void>((resolve) => {
				flooded = resolve;
			});
			delivered = 0;
			const cpuBefore = procStats(relay.pid as number).cpuSeconds;
			const started = now();
			await fetch(`http://127.0.0.1:${port}/cmd`, {
				method: "POST",
				body: JSON.stringify({ id: String(flood + 1), type: "emit", ...spec }),
			});
			await settledNow;
			const seconds = Number(now() - started) / 1e9;
			const cpuMicros = ((procStats(relay.pid as number).cpuSeconds - cpuBefore) / spec.count) * 1e6;
			if (delivered !== spec.count) throw new Error(`minimal relay delivered ${delivered} of ${spec.count} events`);
			measured.push({ seconds, cpuMicros });
		}
		await done;
		return measured;
	} finally {
		relay.kill();
		if (relay.exitCode === null) await once(relay, "exit");
	}
}

/**
 * The same emission through the gateway to `subscribers` SSE clients at once. Each subscriber's
 * `deliveries` keep every event's stamp beside its latency; `beforeEmit` runs once the streams are
 * open and just before pi is told to emit (a bench reads its counters there).
 */
export async function viaGateway(
	gateway: GatewayProcess,
	spec: EmitSpec,
	{
		subscribers = 1,
		parse = true,
		beforeEmit,
	}: { subscribers?: number; parse?: boolean; beforeEmit?: () => void } = {},
) {
	const session = await api(`${gateway.url}/v1/sessions`, "POST", { persist: false });
	// The session's first workspace snapshot (git, at its start) done first: it is the session's
	// cost, not its events', and its spawns would fall into the measured emission.
	await api(`${gateway.url}/v1/sessions/${session.id}/changes`, "GET");
	const results = await Promise.all(
		Array.from({ length: subscribers }, async () => {
			const res = await openSse(`${gateway.url}/v1/sessions/${session.id}/events?types=message_update,agent_settled`);
			const latencies: number[] = [];
			const deliveries: [emittedAt: number, latencyNs: number][] = [];
			let started = 0n;
			const ready = { resolve: () => {} };
			const opened = new Promise<void>((r) => {
				ready.resolve = r;
			});
			const done = readSse(res, (event, data) => {
				if (event === "stream_open") {
					ready.resolve();
					return false;
				}
				if (started === 0n) started = now();
				// Parsed, as the pipe reader parses each line: any client must. (Fan-out skips it: one
				// process reading 100 streams would measure its own JSON.parse, not the gateway.)
				const t = parse ? JSON.parse(data).t : data.slice(data.lastIndexOf('"t":"') + 5, -2);
				if (event === "message_update") {
					const latency = Number(now() - BigInt(t));
					latencies.push(latency);
					deliveries.push([Number(t), latency]);
				}
				return event === "agent_settled";
			});
			await opened;
			return { done, latencies, deliveries, startedAt: () => started };
		}),
	);
	beforeEmit?.();
	const started = now();
	await api(`${gateway.url}/v1/sessions/${session.id}/rpc`, "POST", { type: "emit", ...spec });
	const bytes = await Promise.all(results.map((r) => r.done));
	const seconds = Number(now() - started) / 1e9;
	await api(`${gateway.url}/v1/sessions/${session.id}`, "DELETE");
	const perSubscriber = results.map((r, i) => ({
		latencies: r.latencies,
		deliveries: r.deliveries,
		bytes: bytes[i] as number,
	}));
	return { perSubscriber, seconds };
}

export async function latency(
	gateway: GatewayProcess,
	rates: number[],
	count: (rate: number) => number,
	warmUp = { flood: 3000, pacedMs: 3000 },
) {
	const rows = [];
	// Warm-up (discarded): the first frames through a fresh process pay for lazy compilation, and a
	// paced event takes other paths than a flood (a wake per event): after the flood alone, V8 was
	// still optimizing ~140 functions on its worker threads during the measured 1k events/s run.
	await viaGateway(gateway, { count: warmUp.flood, rate: 0, size: 200 });
	await viaGateway(gateway, { count: warmUp.pacedMs, rate: 1000, size: 200 });
	await viaPipe({ count: warmUp.flood, rate: 0, size: 200 });
	for (const rate of rates) {
		const spec = { count: count(rate), rate, size: 200 };
		const pipe = summarize((await viaPipe(spec)).latencies);
		const gw = summarize((await viaGateway(gateway, spec)).perSubscriber[0]?.latencies ?? []);
		rows.push({
			"events/s": rate,
			events: spec.count,
			"pipe p50 ms": pipe.p50,
			"pipe p99 ms": pipe.p99,
			"SSE p50 ms": gw.p50,
			"SSE p99 ms": gw.p99,
			"SSE max ms": gw.max,
			"added p50 ms": gw.p50 - pipe.p50,
			"added p99 ms": gw.p99 - pipe.p99,
		});
	}
	return rows;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
const spread = (values: number[]) => `${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}`;

/**
 * Each size `repeats` times, the pipe, both relays and the gateway back to back (so each ratio
 * compares runs of the same minute), medians printed: one flood on this 2-core VM moves by ±30 %.
 * The gateway is warm (a discarded flood of the size first), as the relays' second floods are.
 */
export async function throughput(gateway: GatewayProcess, sizes: number[], count: number, repeats = 3) {
	const rows = [];
	for (const size of sizes) {
		const spec = { count, rate: 0, size };
		const runs: Record<string, number>[] = [];
		let delivered = 0;
		let sseBytes = 0;
		await viaGateway(gateway, spec);
		for (let r = 0; r < repeats; r++) {
			const pipe = await viaPipe(spec);
			const [, nodeHttp] = await viaMinimalRelay("node-http", spec);
			const [honoCold, hono] = await viaMinimalRelay("hono", spec);
			const cpuBefore = procStats(gateway.pid).cpuSeconds;
			const gw = await viaGateway(gateway, spec);
			// The gateway's own CPU per event: what it controls, and steadier than the ratio on a busy machine.
			const cpuMicros = ((procStats(gateway.pid).cpuSeconds - cpuBefore) / count) * 1e6;
			delivered = gw.perSubscriber[0]?.latencies.length ?? 0;
			sseBytes = gw.perSubscriber[0]?.bytes ?? 0;
			runs.push({
				pipeRate: count / pipe.seconds,
				pipeMBs: pipe.bytes / pipe.seconds / 1e6,
				gwRate: count / gw.seconds,
				gwMBs: sseBytes / gw.seconds / 1e6,
				gwPipe: pipe.seconds / gw.seconds,
				nodeHttpPipe: pipe.seconds / (nodeHttp?.seconds ?? Number.NaN),
				honoPipe: pipe.seconds / (hono?.seconds ?? Number.NaN),
				honoCold: honoCold?.cpuMicros ?? Number.NaN,
				honoWarm: hono?.cpuMicros ?? Number.NaN,
				gwCpu: cpuMicros,
				gwOverWarm: cpuMicros / (hono?.cpuMicros ?? Number.NaN),
				gwOverCold: cpuMicros / (honoCold?.cpuMicros ?? Number.NaN),
			});
		}
		const m = (key: string) => median(runs.map((run) => run[key] as number));
		const all = (key: string) => runs.map((run) => run[key] as number);
		rows.push({
			"event bytes": size,
			events: count,
			runs: repeats,
			"pipe events/s": Math.round(m("pipeRate")),
			"pipe MB/s": m("pipeMBs"),
			"SSE events/s": Math.round(m("gwRate")),
			"SSE MB/s": m("gwMBs"),
			"SSE / pipe": m("gwPipe"),
			"minimal node:http relay / pipe": m("nodeHttpPipe"),
			"minimal Hono relay / pipe": m("honoPipe"),
			"Hono relay CPU µs/event (cold; warm)": `${m("honoCold").toFixed(2)}; ${m("honoWarm").toFixed(2)}`,
			"gateway CPU µs/event (range)": `${m("gwCpu").toFixed(2)} (${spread(all("gwCpu"))})`,
			"gateway / warm Hono relay CPU (range)": `${m("gwOverWarm").toFixed(2)} (${spread(all("gwOverWarm"))})`,
			"gateway / cold Hono relay CPU": m("gwOverCold"),
			// Fewer than sent: the client fell more than --sse-max-buffered-bytes behind and was cut off.
			delivered: `${delivered}/${count}`,
		});
	}
	return rows;
}

export async function fanout(gateway: GatewayProcess, counts: number[], rate: number, events: number) {
	const rows = [];
	for (const subscribers of counts) {
		const run = await viaGateway(gateway, { count: events, rate, size: 200 }, { subscribers, parse: false });
		const delivered = run.perSubscriber.reduce((n, s) => n + s.latencies.length, 0);
		const all = summarize(run.perSubscriber.flatMap((s) => s.latencies));
		rows.push({
			subscribers,
			"events/s": rate,
			"delivered/expected": `${delivered}/${events * subscribers}`,
			"p50 ms": all.p50,
			"p99 ms": all.p99,
			"max ms": all.max,
		});
	}
	return rows;
}

/** Gateway memory per idle SSE subscriber: open N streams on one quiet session, compare RSS. */
export async function idleSubscribers(gateway: GatewayProcess, count: number) {
	const session = await api(`${gateway.url}/v1/sessions`, "POST", { persist: false });
	const before = await settledMemory(gateway);
	// In batches: hundreds of connections opened in one burst trip the gateway's bound on connections
	// that have not sent their headers yet (--max-half-open-connections, 100), which closes the oldest.
	const streams: Awaited<ReturnType<typeof openSse>>[] = [];
	for (let opened = 0; opened < count; opened += 50) {
		const batch = Array.from({ length: Math.min(50, count - opened) }, () =>
			openSse(`${gateway.url}/v1/sessions/${session.id}/events`),
		);
		streams.push(...(await Promise.all(batch)));
	}
	const after = await settledMemory(gateway);
	for (const res of streams) res.destroy();
	await api(`${gateway.url}/v1/sessions/${session.id}`, "DELETE");
	return [
		{
			"idle subscribers": count,
			"gateway RSS before MB": before.rssBytes / 2 ** 20,
			"gateway RSS after MB": after.rssBytes / 2 ** 20,
			"RSS per subscriber KB": (after.rssBytes - before.rssBytes) / count / 1024,
			"JS heap per subscriber KB": (after.heapBytes - before.heapBytes) / count / 1024,
		},
	];
}
