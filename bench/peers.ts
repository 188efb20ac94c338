/**
 * The peer benchmark (issue 34 item 1): pi-gateway beside opencode (`opencode serve`) and
 * sandbox-agent (which drives the same pi through pi-acp), one scripted OpenAI-compatible model
 * (bench/scripted-openai.ts) for all three on 127.0.0.1, interleaved rounds (the order rotates each
 * round, so a busy moment of a shared machine falls on each in turn), medians with ranges.
 *
 * Per server and round, on a server started once for all rounds:
 * - create → ready: N sessions one after another (each call returns when the server says the
 *   session is ready for a prompt); the p50 of sessions 2–N (the first pays one-time start-up);
 * - memory per extra idle session: PSS of the server's process tree (/proc/<pid>/smaps_rollup,
 *   children included) with N idle sessions less that with 1, over N − 1, each read once the tree
 *   is quiet (under 5% of a CPU for 250 ms; at most 15 s), so a warm pool has refilled;
 * - one long answer (`tokens: 2000`) in session 1: prompt → first delta, prompt → last delta (what
 *   a user waits for the whole answer), tokens/s at the client (the answer's tokens over prompt →
 *   last delta, the measure of issue 34's table: its opencode column, 333 ms to the first delta and
 *   5,705 tokens/s, is 2,000 tokens in 351 ms), the rate once the first delta is in (tokens over
 *   first → last delta: pi's own emission rate bounds it for a server that passes pi's deltas on,
 *   and a server that held the stream back to send it at once would score high here), and server +
 *   agent CPU per token: utime+stime (and that of
 *   reaped children) of the whole tree from the prompt until the tree is quiet again after the
 *   run (its post-run work counted), over the tokens;
 * - N sessions × 500 tokens at once: wall time from the first prompt sent to the last run's end;
 * - then the sessions are deleted.
 * Every answer is checked to be the scripted text, token for token.
 *
 * Once a round, for reference: pi alone on a stdio pipe (bench/peers-pipe.ts), no server, a fresh
 * pi's first prompt of the same long answer: its first delta, whole answer and tokens/s are what
 * pi itself costs (pi-gateway and sandbox-agent run that pi; opencode is its own agent).
 *
 * Run: `npm run bench -- --peers` (full: 6 rounds, 10 sessions, 2,000 and 500 tokens; --rounds=N),
 * `npm run bench -- --peers --smoke` (1 round, 3 sessions, 200 and 50 tokens), or
 * `node bench/peers.ts [--smoke]`. The peers are installed once into ~/.cache/pi-gateway/peers
 * (bench/peers-install.ts); a peer that cannot be installed or started is reported in the table.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { join } from "node:path";
import { percentile, root } from "./lib.ts";
import { installPeers, peerVersions } from "./peers-install.ts";
import { pipeAnswer } from "./peers-pipe.ts";
import { processTree, treeCpuSeconds, treePssBytes } from "./peers-proc.ts";
import {
	type AgentServer,
	type PromptTiming,
	startOpencode,
	startPiGateway,
	startSandboxAgent,
} from "./peers-servers.ts";
import { answerText, startScriptedModel, tokenText } from "./scripted-openai.ts";

export interface PeerOptions {
	rounds: number;
	sessions: number;
	answerTokens: number;
	concurrentTokens: number;
	/** A step (a create, an answer, the concurrent answers) that takes longer fails the peer's round. */
	stepTimeoutMs: number;
	/** Longest wait for the tree to go quiet before each memory reading and around the long answer's CPU reading. */
	settleMs: number;
	/** The servers started (and stopped) at once rather than one after another: their starts are not measured. */
	together?: boolean;
}

export const fullPeerOptions: PeerOptions = {
	rounds: 6,
	sessions: 10,
	answerTokens: 2000,
	concurrentTokens: 500,
	stepTimeoutMs: 120_000,
	// A grown warm pool refills one pi at a time (≈ 1 s of a core each): up to 15 s, so its refill is
	// not charged to the long answer's latency and CPU (at 1 s it was, and slowed that answer).
	settleMs: 15_000,
};
export const smokePeerOptions: PeerOptions = {
	rounds: 1,
	sessions: 2,
	answerTokens: 200,
	concurrentTokens: 50,
	stepTimeoutMs: 30_000,
	settleMs: 200,
	together: true,
};

interface Figures {
	create: number;
	first: number;
	whole: number;
	tokensPerS: number;
	streamRate: number;
	cpuPerToken: number;
	concurrent: number;
	pssPerSession: number;
}

const names = ["pi-gateway", "opencode", "sandbox-agent"] as const;
type Name = (typeof names)[number];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Waits until the tree is quiet (under 5% of one CPU over 250 ms), at most `maxMs`: start-up work,
 * a warm pool refilling or a post-run snapshot is then not charged to the next figure.
 */
async function quiet(pid: number, maxMs: number): Promise<void> {
	const end = performance.now() + maxMs;
	let before = treeCpuSeconds(pid);
	while (performance.now() < end) {
		await sleep(250);
		const after = treeCpuSeconds(pid);
		if (after - before <= 0.0125) return;
		before = after;
	}
}

/** A step that takes too long fails the peer's round instead of hanging the benchmark. */
let stepTimeoutMs = 120_000;
function bounded<T>(step: Promise<T>, what: string): Promise<T> {
	let timer: NodeJS.Timeout | undefined;
	const timeout = new Promise<never>((_, reject) => {
		timer = setTimeout(() => reject(new Error(`${what} took over ${stepTimeoutMs / 1000} s`)), stepTimeoutMs);
	});
	return Promise.race([step, timeout]).finally(() => clearTimeout(timer));
}

/** The answer is the scripted text (anything a server puts before its first token aside). */
function check(text: string, tokens: number, who: string) {
	const answer = text.slice(Math.max(0, text.indexOf(tokenText(1))));
	if (answer.trim() !== answerText(tokens).trim())
		throw new Error(`${who}: the client got ${text.length} characters, not the ${tokens}-token scripted answer`);
}

async function measure(server: AgentServer, o: PeerOptions, log: (line: string) => void): Promise<Figures> {
	const ids: string[] = [];
	const creates: number[] = [];
	let pssOne = 0;
	try {
		for (let i = 0; i < o.sessions; i++) {
			const t0 = performance.now();
			ids.push(await bounded(server.create(), `create ${i + 1}`));
			creates.push(performance.now() - t0);
			if (i === 0) {
				await quiet(server.pid, o.settleMs);
				pssOne = treePssBytes(server.pid);
			}
		}
		log(`${server.name}: ${o.sessions} sessions created`);
		await quiet(server.pid, o.settleMs);
		const pssAll = treePssBytes(server.pid);
		await quiet(server.pid, o.settleMs);
		const cpu0 = treeCpuSeconds(server.pid);
		const long = await bounded(server.prompt(ids[0] as string, o.answerTokens), "the long answer");
		await quiet(server.pid, o.settleMs);
		const cpu = treeCpuSeconds(server.pid) - cpu0;
		check(long.text, o.answerTokens, server.name);
		log(`${server.name}: long answer done`);
		const t0 = performance.now();
		const runs = await bounded(
			Promise.all(ids.map((id) => server.prompt(id, o.concurrentTokens))),
			"the concurrent answers",
		);
		const concurrent = performance.now() - t0;
		for (const run of runs) check(run.text, o.concurrentTokens, server.name);
		return {
			create: percentile(
				creates.slice(1).sort((a, b) => a - b),
				50,
			),
			first: long.firstMs,
			whole: long.lastMs,
			...rates(long, o.answerTokens),
			cpuPerToken: (cpu * 1000) / o.answerTokens,
			concurrent,
			pssPerSession: (pssAll - pssOne) / Math.max(1, o.sessions - 1),
		};
	} finally {
		for (const id of ids) await bounded(server.remove(id), "delete").catch(() => {});
	}
}

function version(command: string, args: string[]): string {
	try {
		return execFileSync(command, args, { encoding: "utf8", timeout: 10_000 }).trim().split("\n")[0] ?? "?";
	} catch {
		return "?";
	}
}

/** Runs the rounds; returns the table rows and a header line saying what ran where. */
export async function peers(o: PeerOptions, log: (line: string) => void = () => {}) {
	stepTimeoutMs = o.stepTimeoutMs;
	// The gateway measured is the working tree as the run starts (others may commit meanwhile).
	const commit = version("git", ["-C", root, "log", "-1", "--format=%h %cI"]);
	const dirty =
		version("git", ["-C", root, "status", "--porcelain", "--untracked-files=no"]) === ""
			? ""
			: " (+ uncommitted edits)";
	const install = await installPeers(log);
	const model = await startScriptedModel();
	const servers = new Map<Name, AgentServer>();
	const missing = new Map<Name, string>();
	const results = new Map<Name, Figures[]>(names.map((n) => [n, []]));
	const notes: string[] = [];
	// pi alone on a pipe, once a round: what pi itself costs in the long answer's rows.
	const pipe: PromptTiming[] = [];
	const start = async (name: Name, how: () => Promise<AgentServer>) => {
		try {
			const t0 = performance.now();
			servers.set(name, await how());
			log(`${name} started in ${Math.round(performance.now() - t0)} ms`);
		} catch (error) {
			missing.set(name, `did not start: ${(error as Error).message.split("\n")[0]}`);
		}
	};
	// Interrupted (Ctrl-C, a CI timeout): stop what was started, so no server or pi outlives the run.
	const interrupted = async (signal: NodeJS.Signals) => {
		for (const server of servers.values()) await server.stop().catch(() => {});
		await model.close();
		process.kill(process.pid, signal);
	};
	process.once("SIGINT", interrupted);
	process.once("SIGTERM", interrupted);
	// Ended by anything else (an uncaught error in a peer's client, say): no server, pi or pi-acp
	// outlives the bench (one crash left a gateway, its pool and opencode running for an hour).
	const killAll = () => {
		for (const server of servers.values())
			for (const pid of processTree(server.pid).reverse())
				try {
					process.kill(pid, "SIGKILL");
				} catch {}
	};
	process.once("exit", killAll);
	try {
		const starts: [Name, () => Promise<AgentServer>][] = [["pi-gateway", () => startPiGateway(model.baseUrl)]];
		if (typeof install.opencode === "string") {
			const binary = install.opencode;
			starts.push(["opencode", () => startOpencode(binary, model.baseUrl)]);
		} else missing.set("opencode", `not installed: ${install.opencode.missing}`);
		if (typeof install.sandboxAgent !== "string")
			missing.set("sandbox-agent", `not installed: ${install.sandboxAgent.missing}`);
		else if (typeof install.piAcp !== "string") missing.set("sandbox-agent", `not installed: ${install.piAcp.missing}`);
		else {
			const [binary, piAcp] = [install.sandboxAgent, install.piAcp];
			starts.push(["sandbox-agent", () => startSandboxAgent(binary, piAcp, model.baseUrl)]);
		}
		if (o.together) await Promise.all(starts.map(([name, how]) => start(name, how)));
		else for (const [name, how] of starts) await start(name, how);
		for (let round = 0; round < o.rounds; round++) {
			const order = names.map((_, i) => names[(i + round) % names.length] as Name);
			for (const name of order) {
				const server = servers.get(name);
				if (!server || missing.has(name)) continue;
				try {
					const figures = await measure(server, o, log);
					(results.get(name) as Figures[]).push(figures);
					const shown = Object.entries(figures).map(([k, v]) => `${k} ${fmt(v, k as keyof Figures)}`);
					log(`round ${round + 1}/${o.rounds}: ${name}: ${shown.join(", ")}`);
				} catch (error) {
					missing.set(name, `failed in round ${round + 1}: ${(error as Error).message.split("\n")[0]}`);
					log(`round ${round + 1}/${o.rounds}: ${name} ${missing.get(name)}`);
				}
			}
			try {
				const timing = await pipeAnswer(model.baseUrl, o.answerTokens, o.stepTimeoutMs);
				check(timing.text, o.answerTokens, "pi on a pipe");
				pipe.push(timing);
				log(
					`round ${round + 1}/${o.rounds}: pi on a pipe: first ${fmt(timing.firstMs, "first")}, whole ${fmt(timing.lastMs, "whole")}`,
				);
			} catch (error) {
				log(`round ${round + 1}/${o.rounds}: pi on a pipe failed: ${(error as Error).message}`);
			}
		}
	} finally {
		process.off("SIGINT", interrupted);
		process.off("SIGTERM", interrupted);
		process.off("exit", killAll);
		const stop = async (server: AgentServer) => {
			const note = server.note?.();
			if (note) notes.push(note);
			log(`stopping ${server.name}`);
			await server.stop().catch(() => {});
		};
		if (o.together) await Promise.all([...servers.values()].map(stop));
		else for (const server of servers.values()) await stop(server);
		await model.close();
	}
	return { rows: rows(results, missing, o, pipe), header: header(install, o, `${commit}${dirty}`), notes };
}

function header(install: Awaited<ReturnType<typeof installPeers>>, o: PeerOptions, gateway: string): string {
	const pi = JSON.parse(
		readFileSync(join(root, "node_modules", "@earendil-works", "pi-coding-agent", "package.json"), "utf8"),
	).version;
	const opencode = typeof install.opencode === "string" ? version(install.opencode, ["--version"]) : "–";
	return [
		`${new Date().toISOString()} · ${cpus().length} × ${cpus()[0]?.model ?? "cpu"} · ${Math.round(totalmem() / 2 ** 30)} GiB · load average ${loadavg()[0]?.toFixed(1)} at the end · node ${process.version}`,
		`pi-gateway ${gateway} · pi ${pi} · opencode ${opencode} · sandbox-agent ${peerVersions["sandbox-agent"]} + pi-acp ${peerVersions["pi-acp"]} (same pi)`,
		`${o.rounds} round(s), interleaved; ${o.sessions} sessions; answers of ${o.answerTokens} and ${o.concurrentTokens} tokens; medians, [min–max] over rounds`,
	].join("\n");
}

const metrics: { key: keyof Figures; label: (o: PeerOptions) => string; better: "lower" | "higher"; unit: string }[] = [
	{ key: "create", label: (o) => `create → ready p50, sessions 2–${o.sessions} (ms)`, better: "lower", unit: "ms" },
	{
		key: "first",
		label: (o) => `${o.answerTokens}-token answer: prompt → first delta (ms)`,
		better: "lower",
		unit: "ms",
	},
	{
		key: "whole",
		label: (o) => `${o.answerTokens}-token answer: prompt → last delta, the whole answer (ms)`,
		better: "lower",
		unit: "ms",
	},
	{
		key: "tokensPerS",
		label: (o) => `${o.answerTokens}-token answer: tokens/s at the client (tokens ÷ prompt → last delta)`,
		better: "higher",
		unit: "",
	},
	{
		key: "streamRate",
		label: (o) => `${o.answerTokens}-token answer: tokens/s once streaming (tokens ÷ first → last delta)`,
		better: "higher",
		unit: "",
	},
	{ key: "cpuPerToken", label: () => "server + agent CPU per token (ms)", better: "lower", unit: "ms" },
	{
		key: "concurrent",
		label: (o) => `${o.sessions} sessions × ${o.concurrentTokens} tokens at once (ms)`,
		better: "lower",
		unit: "ms",
	},
	{
		key: "pssPerSession",
		label: () => "memory per extra idle session, PSS (MB) — one process per session is pi-gateway's isolation",
		better: "lower",
		unit: "MB",
	},
];

function fmt(v: number, key: keyof Figures): string {
	if (!Number.isFinite(v)) return "–";
	if (key === "pssPerSession") return (v / 2 ** 20).toFixed(1);
	if (key === "cpuPerToken") return v.toFixed(3);
	if (v >= 100) return Math.round(v).toLocaleString("en-US");
	return v.toFixed(1);
}

/** A ratio; past 100× (a peer's figure near zero, as opencode's in-process sessions) the digits say nothing. */
const ratio = (r: number) => (r > 100 ? ">100×" : `${r.toFixed(2)}×`);

/** Tokens/s over the whole answer as a client waits for it, and over its stream from the first delta on. */
function rates({ firstMs, lastMs }: PromptTiming, tokens: number): Pick<Figures, "tokensPerS" | "streamRate"> {
	return {
		tokensPerS: lastMs > 0 ? tokens / (lastMs / 1000) : Number.NaN,
		streamRate: lastMs > firstMs ? tokens / ((lastMs - firstMs) / 1000) : Number.NaN,
	};
}

/** The long answer's figures of pi alone on a pipe, as the servers' are computed (the other rows: –). */
function pipeFigures(timing: PromptTiming, tokens: number): Partial<Figures> {
	const { firstMs, lastMs } = timing;
	return {
		first: firstMs,
		whole: lastMs,
		...rates(timing, tokens),
	};
}

function rows(results: Map<Name, Figures[]>, missing: Map<Name, string>, o: PeerOptions, pipe: PromptTiming[]) {
	const median = (xs: number[]) =>
		percentile(
			[...xs].sort((a, b) => a - b),
			50,
		);
	return metrics.map(({ key, label, better }) => {
		const cell = (name: Name) => {
			const runs = results.get(name) ?? [];
			if (runs.length === 0) return { text: missing.get(name) ?? "not run", value: Number.NaN };
			const values = runs.map((r) => r[key]);
			const m = median(values);
			const range = values.length > 1 ? ` [${fmt(Math.min(...values), key)}–${fmt(Math.max(...values), key)}]` : "";
			return { text: `${fmt(m, key)}${range}`, value: m };
		};
		const gw = cell("pi-gateway");
		const row: Record<string, string> = { metric: label(o), "better is": better, "pi-gateway": gw.text };
		for (const peer of ["opencode", "sandbox-agent"] as const) {
			const p = cell(peer);
			row[peer] = p.text;
			row[`pi-gateway ÷ ${peer}`] =
				Number.isFinite(gw.value) && Number.isFinite(p.value) && p.value > 0 ? ratio(gw.value / p.value) : "–";
		}
		const alone = pipe.map((t) => pipeFigures(t, o.answerTokens)[key]).filter((v): v is number => v !== undefined);
		row["pi alone on a pipe (reference)"] =
			alone.length === 0
				? "–"
				: `${fmt(median(alone), key)}${alone.length > 1 ? ` [${fmt(Math.min(...alone), key)}–${fmt(Math.max(...alone), key)}]` : ""}`;
		return row;
	});
}

if (import.meta.url === `file://${process.argv[1]}`) {
	const { table } = await import("./lib.ts");
	const smoke = process.argv.includes("--smoke");
	const o = { ...(smoke ? smokePeerOptions : fullPeerOptions) };
	const rounds = process.argv.find((a) => a.startsWith("--rounds="));
	if (rounds) o.rounds = Number(rounds.slice(9));
	const { rows, header, notes } = await peers(o, (line) => console.error(line));
	console.log(`\n${header}`);
	console.log(table("13. pi-gateway beside opencode and sandbox-agent (one scripted model, offline)", rows));
	for (const note of notes) console.log(`\n${note}`);
}
