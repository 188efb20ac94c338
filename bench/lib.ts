import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { type IncomingMessage, request } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { LineParser } from "../src/client/sse.ts";
import { bundledPiCli, demoExtensionPath } from "../src/sessions/process/spawn.ts";
import { treeCpuSeconds } from "./peers-proc.ts";

export const root = join(dirname(fileURLToPath(import.meta.url)), "..");
export const stubPi = join(root, "bench", "stub-pi.mjs");
export const now = () => process.hrtime.bigint();
/** Every benchmark gateway's bearer token (given by env, as an operator would). */
const token = randomBytes(24).toString("base64url");
export const auth = { authorization: `Bearer ${token}` };

/** A smoke pass (`--smoke`): each table tiny, its figures only a sign that it still runs. */
export const smokeRun = process.argv.includes("--smoke");

export interface GatewayProcess {
	url: string;
	pid: number;
	child: ChildProcess;
	stop(): Promise<void>;
}

/**
 * The smoke pass carries the compile caches a gateway leaves in its data dir (`compile-cache/`: the
 * gateway's stripped and compiled sources, each area's pi bytecode) to the next benchmark gateway's
 * fresh data dir. Without it every one of the pass's ≈ 40 gateways and cluster nodes strips and
 * compiles the gateway anew and its first pi compiles pi's bundle from scratch (≈ 0.3 s and ≈ 0.5 s
 * of a core). A full run gives each gateway a cold data dir, as its figures say.
 */
const carriedCache = smokeRun ? mkdtempSync(join(tmpdir(), "pi-bench-compile-cache-")) : undefined;
if (carriedCache) process.once("exit", () => rmSync(carriedCache, { recursive: true, force: true }));

/** Smoke pass: a data dir without a compile cache gets the one carried so far. */
export function seedCompileCache(dataDir: string): void {
	const to = join(dataDir, "compile-cache");
	if (!carriedCache || existsSync(to) || !existsSync(join(carriedCache, "gateway"))) return;
	mkdirSync(dataDir, { recursive: true });
	cpSync(carriedCache, to, { recursive: true });
}

/** Smoke pass: what a stopped gateway's compile cache holds joins the one carried to the next. */
export function keepCompileCache(dataDir: string): void {
	const from = join(dataDir, "compile-cache");
	if (carriedCache && existsSync(from)) cpSync(from, carriedCache, { recursive: true, force: true });
}

/**
 * The gateway as its own process (as users run it), so its CPU and memory are its own. `coldCache`:
 * not even the smoke pass puts a compile cache in its data dir (a start that is timed as a first one).
 */
export async function startGatewayProcess(
	args: string[],
	extra: { nodeArgs?: string[]; env?: Record<string, string>; coldCache?: boolean; entry?: string } = {},
): Promise<GatewayProcess> {
	// Each gateway its own data directory (one gateway per directory; none in the user's home).
	const ownDataDir = !args.includes("--data-dir");
	if (ownDataDir) args = [...args, "--data-dir", mkdtempSync(join(tmpdir(), "pi-bench-data-"))];
	const dataDir = args[args.lastIndexOf("--data-dir") + 1] as string;
	if (!extra.coldCache) seedCompileCache(dataDir);
	const child = spawn(
		process.execPath,
		[
			// A full GC on SIGUSR2 (settledMemory): memory figures count what is kept, not garbage.
			"--expose-gc",
			"--require",
			join(root, "bench", "gc-on-signal.cjs"),
			...(process.env.GW_NODE_ARGS ?? "").split(" ").filter(Boolean),
			...(extra.nodeArgs ?? []),
			// `npm start`'s sources unless told (pool-create.ts times the bin's bundle beside them).
			extra.entry ?? join(root, "src/main.ts"),
			"--port",
			"0",
			"--log-level",
			"info",
			...args,
		],
		{
			stdio: ["ignore", "pipe", "inherit"],
			env: { ...process.env, ...extra.env, PI_GATEWAY_TOKEN: token },
		},
	);
	const url = await new Promise<string>((resolve, reject) => {
		let buffered = "";
		const onData = (chunk: Buffer) => {
			buffered += chunk.toString("utf8");
			const match = /"url":"(http:[^"]+)".*"msg":"pi-gateway listening"/.exec(buffered);
			if (match) {
				child.stdout?.off("data", onData);
				child.stdout?.resume();
				resolve(match[1] as string);
			}
		};
		child.stdout?.on("data", onData);
		child.once("exit", (code) => reject(new Error(`gateway exited with ${code}`)));
	});
	child.stdout?.on("data", () => {});
	return {
		url,
		pid: child.pid as number,
		child,
		stop: () =>
			new Promise((resolve) => {
				child.once("exit", () => {
					keepCompileCache(dataDir);
					// A data dir this made is this gateway's alone (a caller's is the caller's to remove).
					if (ownDataDir) rmSync(dataDir, { recursive: true, force: true });
					resolve();
				});
				child.kill("SIGTERM");
			}),
	};
}

export async function api(url: string, method: string, body?: unknown): Promise<any> {
	const res = await fetch(url, {
		method,
		headers: body === undefined ? auth : { ...auth, "content-type": "application/json" },
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	const text = await res.text();
	if (res.status >= 400) throw new Error(`${method} ${url}: ${res.status} ${text}`);
	return text ? JSON.parse(text) : undefined;
}

/**
 * Opens an SSE response with node:http (a plain socket reader, as efficient as the pipe reader it
 * is compared with; fetch's web streams would measure the client more than the gateway).
 */
export function openSse(url: string, init: { method?: string; body?: unknown } = {}): Promise<IncomingMessage> {
	const body = init.body === undefined ? undefined : JSON.stringify(init.body);
	return new Promise((resolve, reject) => {
		const req = request(url, {
			method: init.method ?? "GET",
			headers: { ...auth, accept: "text/event-stream", ...(body ? { "content-type": "application/json" } : {}) },
		});
		req.once("response", resolve);
		req.once("error", reject);
		req.end(body);
	});
}

/**
 * Reads an SSE response, calling `onData(event, data)` per frame, until it returns true. Resolves
 * with the bytes read. The frames come from the client's parser (src/client/sse.ts), the one every
 * reader of the gateway's streams uses.
 */
export function readSse(
	res: IncomingMessage,
	onData: (event: string, data: string) => boolean | undefined,
): Promise<number> {
	return new Promise((resolve, reject) => {
		if (res.statusCode !== 200) {
			reject(new Error(`SSE: HTTP ${res.statusCode}`));
			res.resume();
			return;
		}
		res.setEncoding("utf8");
		const parser = new LineParser();
		let bytes = 0;
		const onChunk = (chunk: string) => {
			bytes += Buffer.byteLength(chunk);
			for (const frame of parser.feed(chunk)) {
				if (onData(frame.event, frame.data)) {
					res.off("data", onChunk);
					res.destroy();
					resolve(bytes);
					return;
				}
			}
		};
		res.on("data", onChunk);
		res.once("end", () => resolve(bytes));
		res.once("error", reject);
	});
}

/** Reads a child's stdout as any pi client must: split on LF, JSON.parse each line. */
export function readPipe(
	child: ChildProcess,
	onRecord: (record: any, line: string) => boolean | undefined,
): Promise<number> {
	return new Promise((resolve) => {
		let buffer = "";
		let bytes = 0;
		const onData = (chunk: Buffer) => {
			bytes += chunk.length;
			buffer += chunk.toString("utf8");
			let start = 0;
			for (let lf = buffer.indexOf("\n"); lf !== -1; lf = buffer.indexOf("\n", start)) {
				const line = buffer.slice(start, lf);
				start = lf + 1;
				if (onRecord(JSON.parse(line), line)) {
					child.stdout?.off("data", onData);
					resolve(bytes);
					return;
				}
			}
			buffer = buffer.slice(start);
		};
		child.stdout?.on("data", onData);
	});
}

/**
 * Real pi with the demo model in its own agent folder, read straight from its pipe (as a client
 * without the gateway would), its environment as small as the gateway gives its children.
 * `nodeFlags` go on pi's node command line, as --pi-node-options puts them.
 */
export function spawnDemoPi(nodeFlags: string[] = []): ChildProcess {
	const agentDir = mkdtempSync(join(tmpdir(), "pi-bench-agent-"));
	const cli = [bundledPiCli(), "--mode", "rpc", "--no-session", "-e", demoExtensionPath];
	const child = spawn(process.execPath, [...nodeFlags, ...cli, "--provider", "pi-gateway-demo", "--model", "demo"], {
		cwd: agentDir,
		stdio: ["pipe", "pipe", "ignore"],
		env: { PATH: process.env.PATH, HOME: process.env.HOME, PI_OFFLINE: "1", PI_CODING_AGENT_DIR: agentDir },
	});
	child.once("exit", () => rmSync(agentDir, { recursive: true, force: true }));
	return child;
}

export function spawnStub(): ChildProcess {
	return spawn(process.execPath, [stubPi, "--mode", "rpc"], { stdio: ["pipe", "pipe", "inherit"] });
}

export function percentile(sorted: number[], p: number): number {
	if (sorted.length === 0) return Number.NaN;
	return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

export function summarize(latenciesNs: number[]) {
	const ms = latenciesNs.map((n) => n / 1e6).sort((a, b) => a - b);
	return { n: ms.length, p50: percentile(ms, 50), p99: percentile(ms, 99), max: ms.at(-1) ?? Number.NaN };
}

/** CPU seconds (user+system) and RSS bytes of a process, from /proc. */
export function procStats(pid: number): { cpuSeconds: number; rssBytes: number } {
	const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
	const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
	const ticks = Number(fields[11]) + Number(fields[12]);
	const rssKb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
	return { cpuSeconds: ticks / 100, rssBytes: rssKb * 1024 };
}

/** CPU seconds the whole machine has spent busy (not idle, not waiting for I/O), from /proc/stat. */
function machineCpuSeconds(): number {
	const [, ...ticks] = (readFileSync("/proc/stat", "utf8").split("\n")[0] as string).trim().split(/\s+/);
	// user nice system idle iowait irq softirq steal (guest time is in user already)
	const [user, nice, system, , , irq, softirq, steal] = ticks.map(Number) as number[];
	return ((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) / 100;
}

/**
 * When the last table was made, and the CPU spent by then: a smoke pass says what each table took,
 * so CI's minutes can be read. Two CPU figures: the bench's own process tree (this process, the
 * gateways, pi, the peers; steady on a shared machine, but it misses what is not reaped inside the
 * tree: a sandboxed pi whose bwrap is killed, PostgreSQL's daemon), and the whole machine's (all of
 * it, and all of everything else running: the figure on a CI machine that runs the bench alone).
 */
const mark = () => ({ wall: performance.now(), cpu: treeCpuSeconds(process.pid), machine: machineCpuSeconds() });
const benchStarted = mark();
let lastTable = benchStarted;

/** "12.3 s wall; CPU 8.0 s (process tree), 15.0 s (machine)" since `since`. */
export function took(since: ReturnType<typeof mark>): string {
	const at = mark();
	const s = (seconds: number) => `${seconds.toFixed(1)} s`;
	return `${s((at.wall - since.wall) / 1000)} wall; CPU ${s(at.cpu - since.cpu)} (bench's process tree), ${s(at.machine - since.machine)} (machine)`;
}

/** The whole run's wall and CPU (run.ts prints it last). */
export const tookInAll = () => took(benchStarted);

export function table(title: string, rows: Record<string, string | number>[]): string {
	const since = took(lastTable);
	lastTable = mark();
	const cols = Object.keys(rows[0] ?? {});
	const fmt = (v: string | number) => (typeof v === "number" ? (Number.isInteger(v) ? String(v) : v.toFixed(3)) : v);
	const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => fmt(r[c] ?? "").length)));
	const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i] as number)).join(" | ")} |`;
	return [
		`\n### ${title}\n`,
		line(cols),
		`|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`,
		...rows.map((r) => line(cols.map((c) => fmt(r[c] ?? "")))),
		...(smokeRun ? [`\nsmoke: ${since} since the table before`] : []),
	].join("\n");
}

/**
 * How long a process is given after a full GC before its memory is read (ms): V8 hands freed pages
 * back lazily. A smoke pass's memory figures are not kept, so it waits less.
 */
export const settleMs = smokeRun ? 100 : 500;

/**
 * The gateway's RSS (from /proc) and used JS heap (from its own /metrics: prom-client's default
 * metrics) after a full garbage collection, so that a difference counts what is kept: without it,
 * start-up garbage collected in between made "per session" figures negative.
 */
export async function settledMemory(gateway: GatewayProcess): Promise<{ rssBytes: number; heapBytes: number }> {
	// Twice: V8 returns freed pages to the system lazily, after a collection that finds little to do.
	for (let i = 0; i < 2; i++) {
		process.kill(gateway.pid, "SIGUSR2");
		await new Promise((r) => setTimeout(r, settleMs));
	}
	const text = await (await fetch(`${gateway.url}/metrics`, { headers: auth })).text();
	const heapBytes = Number(/^nodejs_heap_size_used_bytes (\d+)/m.exec(text)?.[1] ?? Number.NaN);
	return { rssBytes: procStats(gateway.pid).rssBytes, heapBytes };
}

/**
 * One `count: 20` prompt of a session, read from the prompt's own SSE stream: prompt sent → the
 * first text_delta, and → agent_settled (ms).
 */
export async function countPrompt(
	gateway: GatewayProcess,
	id: string,
): Promise<{ firstDeltaMs: number; totalMs: number }> {
	const started = now();
	let first = 0n;
	const res = await openSse(`${gateway.url}/v1/sessions/${id}/prompt`, {
		method: "POST",
		body: { message: "count: 20" },
	});
	await readSse(res, (event, data) => {
		if (!first && event === "message_update" && data.includes('"text_delta"')) first = now();
		return event === "agent_settled";
	});
	return { firstDeltaMs: Number(first - started) / 1e6, totalMs: Number(now() - started) / 1e6 };
}
