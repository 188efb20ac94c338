/**
 * The relay's cost (issue 42 item 1: "first delta within 5 ms, tokens/s the same within 5 %"): one
 * scripted OpenAI-compatible server on 127.0.0.1 streams the same long answer to two gateways with
 * the same models.json, one sandboxed (pi's calls go forwarder → unix socket → relay → provider)
 * and one with --sandbox off (pi calls the provider itself). Rounds alternate which side goes
 * first; each side keeps one warmed session. A client of each gateway times the answer's text
 * deltas (prompt sent → first delta; tokens/s from first to last delta). Medians, relay/direct
 * paired per round with a 95 % interval, and the load average, since a busy 2-core machine moves
 * both sides by more than the relay costs.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { api, openSse, procStats, readSse, root, startGatewayProcess } from "./lib.ts";
import { treeCpuSeconds } from "./peers-proc.ts";
import { deltaClock, type PromptTiming, piAgentDir } from "./peers-servers.ts";
import { answerText, scriptedModelId } from "./scripted-openai.ts";

/**
 * The scripted model in a process of its own, as relay-hop.ts runs it: not on the event loop of
 * the client that reads both gateways' events. It prints its address, then the hrtime each chat
 * call arrived at.
 */
const modelHost = `
import { startScriptedModel } from ${JSON.stringify(pathToFileURL(join(root, "bench/scripted-openai.ts")).href)};
const model = await startScriptedModel();
const push = model.requests.push.bind(model.requests);
model.requests.push = (...calls) => {
	for (const call of calls) process.stdout.write(\`at \${call.at}\\n\`);
	return push(...calls);
};
console.log(model.baseUrl);
process.on("SIGTERM", () => process.exit(0));
`;

async function startModel(): Promise<{ baseUrl: string; requests: { at: bigint }[]; close(): Promise<void> }> {
	const child = spawn(process.execPath, ["--input-type=module", "-e", modelHost], {
		stdio: ["ignore", "pipe", "inherit"],
	});
	const requests: { at: bigint }[] = [];
	let seen = "";
	const baseUrl = await new Promise<string>((resolve, reject) => {
		child.stdout.on("data", (chunk: Buffer) => {
			seen += chunk.toString("utf8");
			let end = seen.indexOf("\n");
			for (; end !== -1; end = seen.indexOf("\n")) {
				const line = seen.slice(0, end);
				seen = seen.slice(end + 1);
				if (line.startsWith("at ")) requests.push({ at: BigInt(line.slice(3)) });
				else resolve(line);
			}
		});
		child.once("exit", (code) => reject(new Error(`the scripted model exited with ${code}`)));
	});
	const close = () =>
		new Promise<void>((resolve) => {
			child.once("exit", () => resolve());
			child.kill();
		});
	return { baseUrl, requests, close };
}

interface Side {
	name: string;
	/** The gateway's CPU seconds so far (the relay's work is there, beside the SSE to the client). */
	cpu(): number;
	/** The CPU seconds of pi and the rest of the gateway's process tree (bwrap, the forwarder in pi). */
	piCpu(): number;
	/** Times one answer; `sentAt` is the hrtime the prompt left the client. */
	prompt(tokens: number): Promise<PromptTiming & { sentAt: bigint }>;
	stop(): Promise<void>;
}

async function startSide(name: string, baseUrl: string, extra: string[]): Promise<Side> {
	const dataDir = mkdtempSync(join(tmpdir(), "pi-bench-relay-gw-"));
	const agentDir = piAgentDir(baseUrl);
	const gateway = await startGatewayProcess(
		[
			"--data-dir",
			dataDir,
			"--pi-agent-dir",
			agentDir,
			"--provider",
			"bench",
			"--model",
			scriptedModelId,
			"--warm-pool",
			"0",
			...extra,
		],
		{ env: { PI_OFFLINE: "1" } },
	);
	const id: string = (await api(`${gateway.url}/v1/sessions`, "POST", {})).id;
	const prompt = async (tokens: number) => {
		const sentAt = process.hrtime.bigint();
		const clock = deltaClock();
		const res = await openSse(`${gateway.url}/v1/sessions/${id}/prompt`, {
			method: "POST",
			body: { message: `tokens: ${tokens}` },
		});
		await readSse(res, (event, data) => {
			if (event === "message_update" && data.includes('"text_delta"')) {
				const update = JSON.parse(data).assistantMessageEvent;
				if (update?.type === "text_delta") clock.delta(update.delta);
			}
			return event === "agent_settled";
		});
		return { ...clock.done(), sentAt };
	};
	return {
		name,
		cpu: () => procStats(gateway.pid).cpuSeconds,
		piCpu: () => treeCpuSeconds(gateway.pid) - procStats(gateway.pid).cpuSeconds,
		prompt,
		async stop() {
			await gateway.stop();
			rmSync(dataDir, { recursive: true, force: true });
			rmSync(agentDir, { recursive: true, force: true });
		},
	};
}

interface Sample {
	first: number[];
	/** Prompt sent → the call reaches the provider (pi, the forwarder and the relay on the way). */
	toProvider: number[];
	rate: number[];
	cpu: number[];
	piCpu: number[];
}

/**
 * The median of paired figures and the interval that holds the true median with ≥ 95 % (the order
 * statistics a sign test gives): on a busy machine one run's median moves by more than the relay costs.
 */
export function pairedMedian(values: number[], digits: number, signed = false): string {
	const sorted = [...values].sort((a, b) => a - b);
	const n = sorted.length;
	const k = Math.max(0, Math.floor((n - 1.96 * Math.sqrt(n)) / 2));
	const f = (v: number) => `${signed && v >= 0 ? "+" : ""}${v.toFixed(digits)}`;
	return `${f(median(sorted))} [${f(sorted[k] as number)}, ${f(sorted[n - 1 - k] as number)}]`;
}

export const median = (values: number[]) => {
	const sorted = [...values].sort((a, b) => a - b);
	const mid = sorted.length >> 1;
	return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};

export interface RelayBench {
	rows: Record<string, string | number>[];
	note: string;
}

/**
 * `rounds` interleaved rounds of one `tokens`-token streamed answer on each side (plus one warm-up
 * each). `startTogether` (the smoke pass) starts both gateways at once: their starts are not measured.
 */
export async function relayBench(rounds: number, tokens: number, startTogether = false): Promise<RelayBench> {
	const model = await startModel();
	const sides: Side[] = [];
	const loadBefore = loadavg()[0] ?? 0;
	try {
		const starts: [string, string[]][] = [
			["relay (sandboxed)", []],
			["direct (--sandbox off)", ["--sandbox", "off"]],
		];
		if (startTogether) {
			const started = await Promise.allSettled(starts.map(([name, extra]) => startSide(name, model.baseUrl, extra)));
			for (const side of started) if (side.status === "fulfilled") sides.push(side.value);
			for (const side of started) if (side.status === "rejected") throw side.reason;
		} else for (const [name, extra] of starts) sides.push(await startSide(name, model.baseUrl, extra));
		const expected = answerText(tokens).trim();
		const samples = new Map<string, Sample>(
			sides.map((s) => [s.name, { first: [], toProvider: [], rate: [], cpu: [], piCpu: [] }]),
		);
		for (let round = -1; round < rounds; round++) {
			// Round -1 warms each side's pi (its first call, the relay's first connection); not counted.
			const order = round % 2 === 0 ? sides : [...sides].reverse();
			for (const side of order) {
				const cpuBefore = side.cpu();
				const piBefore = side.piCpu();
				const calls = model.requests.length;
				const timing = await side.prompt(tokens);
				const call = model.requests[calls];
				const cpu = side.cpu() - cpuBefore;
				const piCpu = side.piCpu() - piBefore;
				if (timing.text.trim() !== expected)
					throw new Error(`${side.name}: the answer arrived incomplete (${timing.text.length} characters)`);
				if (round < 0) continue;
				const sample = samples.get(side.name) as Sample;
				sample.cpu.push(cpu * 1000);
				sample.piCpu.push(piCpu * 1000);
				sample.first.push(timing.firstMs);
				if (call) sample.toProvider.push(Number(call.at - timing.sentAt) / 1e6);
				sample.rate.push((tokens - 1) / ((timing.lastMs - timing.firstMs) / 1000));
			}
		}
		const [relay, direct] = sides.map((s) => samples.get(s.name) as Sample) as [Sample, Sample];
		const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
		const rows: Record<string, string | number>[] = sides.map((side) => {
			const s = samples.get(side.name) as Sample;
			return {
				side: side.name,
				rounds: s.first.length,
				"first delta p50 (ms)": median(s.first),
				"first delta min (ms)": Math.min(...s.first),
				"of it to the provider p50 (ms)": median(s.toProvider),
				"tokens/s p50": Math.round(median(s.rate)),
				"gateway CPU / answer, mean (ms)": mean(s.cpu),
				"pi CPU / answer, mean (ms)": mean(s.piCpu),
			};
		});
		// Paired per round: each relay round against the direct round beside it, with the interval.
		rows.push({
			side: "relay − direct (paired, 95% interval) / relay ÷ direct",
			rounds,
			"first delta p50 (ms)": pairedMedian(
				relay.first.map((v, i) => v - (direct.first[i] as number)),
				2,
				true,
			),
			"first delta min (ms)": `${(Math.min(...relay.first) - Math.min(...direct.first)).toFixed(2)}`,
			"of it to the provider p50 (ms)": pairedMedian(
				relay.toProvider.map((v, i) => v - (direct.toProvider[i] as number)),
				2,
				true,
			),
			"tokens/s p50": pairedMedian(
				relay.rate.map((v, i) => v / (direct.rate[i] as number)),
				3,
			),
			"gateway CPU / answer, mean (ms)": `+${(mean(relay.cpu) - mean(direct.cpu)).toFixed(1)}`,
			"pi CPU / answer, mean (ms)": `+${(mean(relay.piCpu) - mean(direct.piCpu)).toFixed(1)}`,
		});
		const note = `${tokens}-token streamed answer (one SSE chunk a token), ${rounds} interleaved rounds · load average ${loadBefore.toFixed(1)} before, ${(loadavg()[0] ?? 0).toFixed(1)} after`;
		return { rows, note };
	} finally {
		for (const side of sides) await side.stop();
		await model.close();
	}
}
