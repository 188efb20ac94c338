/**
 * A prompt's cost over a session's life (issue 34 item 2): one session in the default layout (the
 * gateway with only --data-dir, the demo model, no --workspace-root, so the session's folder is
 * <data-dir>/workspaces/<id> and its shadow git repository <data-dir>/snapshots/<id>), N prompts in a
 * row, each `bash:` writing a small file, and a 20 MB incompressible file written by the 3rd prompt.
 *
 * Per prompt:
 * - prompt → first message_update: POST …/prompt to the first model delta on the SSE stream, so the
 *   model request is in it, and was the pre-run snapshot until it left the prompt's path (what grew
 *   36 → 2,663 ms when the repository lived in the folder it snapshots);
 * - prompt → agent_settled: the whole run, tool call included;
 * - prompt → run_changes: to the post-run snapshot's event (on the session's event stream);
 * - gateway CPU: utime+stime of the gateway process (its own process, as users run it) from
 *   /proc/<pid>/stat, from the start of this prompt to its run_changes (the next prompt starts then);
 * - git CPU: cutime+cstime of that process over the same span: the CPU of every child the gateway
 *   started and reaped (git, and bwrap around it when the sandbox is on). pi is a child too, but a
 *   live one, so none of its CPU is in it; nothing else the gateway spawns runs per prompt;
 * - pi CPU: utime+stime of the gateway's live descendants (pi, bwrap around it) over that span:
 *   pi's own cost, which grows with its context (each prompt adds four messages to what it sends).
 * CPU comes in clock ticks of 10 ms, so the means (over each window) are the finer figure.
 * Then the bytes on disk (`du -sk`) of <data-dir>/snapshots/<id> and of the session's folder.
 *
 * Beside it, interleaved prompt by prompt (so both see the same machine), the same prompts to one
 * pi alone, read from its pipe (the gateway's node flags, its own session folder, no gateway): what
 * of the growth is pi's own (its context grows four messages a prompt), and the gateway's part of
 * prompt → first model delta as the difference of the two.
 *
 * Run alone with `node bench/prompt-life.ts [--smoke]`, or `npm run bench -- --only=prompt-life`.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultPiNodeOptions } from "../src/config/child-env.ts";
import { bundledPiCli, demoExtensionPath } from "../src/sessions/process/spawn.ts";
import { api, now, openSse, percentile, procStats, readPipe, readSse, startGatewayProcess } from "./lib.ts";

/** CPU seconds of a process itself and of its reaped children (clock ticks of 10 ms). */
function cpuOf(pid: number): { self: number; children: number } {
	const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
	const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
	return { self: (Number(f[11]) + Number(f[12])) / 100, children: (Number(f[13]) + Number(f[14])) / 100 };
}

/** CPU seconds of the live descendants of a process (pi, and bwrap around it when the sandbox is on). */
function liveDescendantsCpu(pid: number): number {
	let total = 0;
	const walk = (parent: number) => {
		let children: number[] = [];
		try {
			for (const task of readdirSync(`/proc/${parent}/task`))
				children = children.concat(
					readFileSync(`/proc/${parent}/task/${task}/children`, "utf8").split(" ").filter(Boolean).map(Number),
				);
		} catch {
			return; // exited meanwhile
		}
		for (const child of children) {
			try {
				total += cpuOf(child).self;
			} catch {}
			walk(child);
		}
	};
	walk(pid);
	return total;
}

const duKiB = (path: string) => Number(execFileSync("du", ["-sk", path], { encoding: "utf8" }).split("\t")[0]);

interface Sample {
	firstMs: number;
	/** The same prompt to pi alone: prompt → first model delta, → agent_settled, pi's CPU. */
	aloneFirstMs: number;
	aloneSettledMs: number;
	aloneCpuMs: number;
	/** firstMs − aloneFirstMs: what the gateway adds to the way to the model. */
	addedFirstMs: number;
	settledMs: number;
	runMs: number;
	gatewayCpuMs: number;
	gitCpuMs: number;
	piCpuMs: number;
	shadowKiB: number;
	folderKiB: number;
}

/** pi alone with the demo model, as the gateway starts it (node flags, a session folder), in `cwd`. */
async function startAlone(cwd: string): Promise<ChildProcess> {
	const flags = defaultPiNodeOptions.split(" ").filter(Boolean);
	const args = [...flags, bundledPiCli(), "--mode", "rpc", "--session-dir", join(cwd, ".sessions")];
	const child = spawn(
		process.execPath,
		[...args, "-e", demoExtensionPath, "--provider", "pi-gateway-demo", "--model", "demo"],
		{
			cwd,
			stdio: ["pipe", "pipe", "ignore"],
			env: { PATH: process.env.PATH, HOME: cwd, PI_OFFLINE: "1", PI_CODING_AGENT_DIR: join(cwd, ".agent") },
		},
	);
	const ready = readPipe(child, (r) => r.type === "response");
	child.stdin?.write(`${JSON.stringify({ id: "0", type: "get_state" })}\n`);
	await ready;
	return child;
}

/** One prompt to pi alone: to its first model delta and to agent_settled (ms), and its CPU (ms). */
async function promptAlone(child: ChildProcess, i: number, message: string) {
	const cpu0 = procStats(child.pid as number).cpuSeconds;
	const t0 = now();
	let first = 0n;
	const done = readPipe(child, (r) => {
		if (!first && r.type === "message_update") first = now();
		return r.type === "agent_settled";
	});
	child.stdin?.write(`${JSON.stringify({ id: `p${i}`, type: "prompt", message })}\n`);
	await done;
	const settled = now();
	return {
		firstMs: Number(first - t0) / 1e6,
		settledMs: Number(settled - t0) / 1e6,
		cpuMs: (procStats(child.pid as number).cpuSeconds - cpu0) * 1000,
	};
}

/** `args`: more gateway flags (the smoke pass gives `--warm-pool 0`: a pool is pi started for nothing here). */
export async function promptLife(prompts: number, bigPrompt = 3, args: string[] = []) {
	const dataDir = mkdtempSync(join(tmpdir(), "pi-bench-life-"));
	const aloneDir = mkdtempSync(join(tmpdir(), "pi-bench-life-alone-"));
	const gateway = await startGatewayProcess(["--data-dir", dataDir, ...args]);
	const alone = await startAlone(aloneDir);
	const samples: Sample[] = [];
	try {
		const session = await api(`${gateway.url}/v1/sessions`, "POST", {});
		const folder: string = session.cwd;
		const shadow = join(dataDir, "snapshots", session.id);
		if (!folder?.startsWith(join(dataDir, "workspaces")))
			throw new Error(`not the default layout: the session's folder is ${folder}`);
		// run_changes comes after the run's agent_settled (the post-run snapshot), on the session's
		// stream rather than the prompt's: one subscription for the whole session, a waiter per run.
		const changed = new Map<string, bigint>();
		let onChanged: (() => void) | undefined;
		const events = await openSse(`${gateway.url}/v1/sessions/${session.id}/events?types=run_changes`);
		const reading = readSse(events, (event, data) => {
			if (event === "run_changes") {
				changed.set(JSON.parse(data).runId, now());
				onChanged?.();
			}
			return event === "session_exit";
		});
		let before = cpuOf(gateway.pid);
		let piBefore = liveDescendantsCpu(gateway.pid);
		for (let i = 1; i <= prompts; i++) {
			const command =
				i === bigPrompt
					? "head -c 20000000 /dev/urandom > big.bin && echo ok"
					: `mkdir -p notes && echo "prompt ${i} $(date +%s%N)" > notes/p${i}.txt && echo ok`;
			const t0 = now();
			let first = 0n;
			let settled = 0n;
			let runId = "";
			const res = await openSse(`${gateway.url}/v1/sessions/${session.id}/prompt`, {
				method: "POST",
				body: { message: `bash: ${command}` },
			});
			await readSse(res, (event, data) => {
				if (event === "stream_open") runId = JSON.parse(data).runId;
				if (!first && event === "message_update") first = now();
				if (event === "agent_settled") settled = now();
				return event === "agent_settled";
			});
			if (!first || !settled) throw new Error(`prompt ${i}: the stream ended without a model delta or agent_settled`);
			while (!changed.has(runId)) await new Promise<void>((r) => (onChanged = r));
			const done = changed.get(runId) as bigint;
			// Sizes outside the CPU span: du is the bench's child, not the gateway's.
			const after = cpuOf(gateway.pid);
			const piAfter = liveDescendantsCpu(gateway.pid);
			const firstMs = Number(first - t0) / 1e6;
			const pi = await promptAlone(alone, i, `bash: ${command}`);
			samples.push({
				firstMs,
				aloneFirstMs: pi.firstMs,
				aloneSettledMs: pi.settledMs,
				aloneCpuMs: pi.cpuMs,
				addedFirstMs: firstMs - pi.firstMs,
				settledMs: Number(settled - t0) / 1e6,
				runMs: Number(done - t0) / 1e6,
				gatewayCpuMs: (after.self - before.self) * 1000,
				gitCpuMs: (after.children - before.children) * 1000,
				piCpuMs: (piAfter - piBefore) * 1000,
				shadowKiB: duKiB(shadow),
				folderKiB: duKiB(folder),
			});
			before = after;
			piBefore = piAfter;
		}
		await api(`${gateway.url}/v1/sessions/${session.id}`, "DELETE");
		await reading;
	} finally {
		alone.stdin?.end();
		await gateway.stop();
		rmSync(dataDir, { recursive: true, force: true });
		rmSync(aloneDir, { recursive: true, force: true });
	}
	return report(samples, bigPrompt);
}

function report(samples: Sample[], bigPrompt: number) {
	const window = Math.min(20, Math.floor(samples.length / 2));
	// The 20 MB prompt is one of a kind (it hashes 20 MB once): left out of the first window's figures.
	const first = samples.slice(0, window + 1).filter((_, i) => i + 1 !== bigPrompt);
	const firstWindow = first.slice(0, window);
	const last = samples.slice(-window);
	const stat = (rows: Sample[], key: keyof Sample) => {
		const sorted = rows.map((r) => r[key]).sort((a, b) => a - b);
		return {
			p50: percentile(sorted, 50),
			p90: percentile(sorted, 90),
			mean: sorted.reduce((sum, v) => sum + v, 0) / sorted.length,
		};
	};
	const metrics: [string, keyof Sample][] = [
		["prompt → first model delta (ms)", "firstMs"],
		["prompt → agent_settled (ms)", "settledMs"],
		["prompt → run_changes (post-run snapshot) (ms)", "runMs"],
		["gateway CPU per prompt (ms)", "gatewayCpuMs"],
		["git (reaped children) CPU per prompt (ms)", "gitCpuMs"],
		["pi (live children) CPU per prompt (ms)", "piCpuMs"],
		["pi alone: prompt → first model delta (ms)", "aloneFirstMs"],
		["pi alone: prompt → agent_settled (ms)", "aloneSettledMs"],
		["pi alone: CPU per prompt (ms)", "aloneCpuMs"],
		["gateway's part of prompt → first model delta (ms)", "addedFirstMs"],
	];
	const cost = metrics.map(([label, key]) => {
		const a = stat(firstWindow, key);
		const b = stat(last, key);
		return {
			metric: label,
			[`first ${window} p50`]: fixed(a.p50),
			[`first ${window} p90`]: fixed(a.p90),
			[`first ${window} mean`]: fixed(a.mean),
			[`last ${window} p50`]: fixed(b.p50),
			[`last ${window} p90`]: fixed(b.p90),
			[`last ${window} mean`]: fixed(b.mean),
			"last/first p50": a.p50 > 0 ? fixed(b.p50 / a.p50, 2) : "–",
			"last/first mean": a.mean > 0 ? fixed(b.mean / a.mean, 2) : "–",
		};
	});
	const marks = [...new Set([1, bigPrompt, 10, 20, 50, 100, 200, samples.length])].filter((n) => n <= samples.length);
	const size = marks.map((n) => {
		const s = samples[n - 1] as Sample;
		return {
			"after prompt": n === bigPrompt ? `${n} (20 MB file)` : n,
			"<data-dir>/snapshots/<id> (MB)": fixed(s.shadowKiB / 1024),
			"session folder (MB)": fixed(s.folderKiB / 1024),
		};
	});
	return { cost, size };
}

const fixed = (v: number, digits = 1) => v.toFixed(digits);

export function promptLifeTables(result: Awaited<ReturnType<typeof promptLife>>, prompts: number, table: TableFn) {
	return [
		table(
			`12. A prompt's cost over one session's life: ${prompts} \`bash:\` prompts, default layout (real pi, demo model; the 20 MB prompt left out)`,
			result.cost,
		),
		table("12b. The session's bookkeeping on disk (du)", result.size),
	].join("\n");
}

/**
 * The smoke pass: 6 prompts (a first window of 3 around the 20 MB prompt, a last one of 3, sizes
 * after prompts 1, 3 and 6), on a gateway without a warm pool; the figures need 200.
 */
export const smokePrompts = 6;
export const smokeArgs = ["--warm-pool", "0"];

type TableFn = (title: string, rows: Record<string, string | number>[]) => string;

if (import.meta.url === `file://${process.argv[1]}`) {
	const { table } = await import("./lib.ts");
	const smoke = process.argv.includes("--smoke");
	const prompts = smoke ? smokePrompts : 200;
	console.log(promptLifeTables(await promptLife(prompts, 3, smoke ? smokeArgs : []), prompts, table));
}
