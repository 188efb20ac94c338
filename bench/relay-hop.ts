/**
 * The relay's own hop, without pi or the sandbox (the second table of the relay section): a plain
 * HTTP client streams the same answer from the scripted model directly, and through the relay in
 * another process, as in the gateway: by the path a sandboxed pi's call takes (the forwarder,
 * loaded into the client's process as it is into pi's, → the relay's unix socket) and by the unix
 * socket itself (what the forwarder's copy costs). The model and the relay each run in a process
 * of their own; rounds turn which path goes first. Relay − direct is paired per round, with a
 * 95 % interval.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { Agent, request } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { procStats, root } from "./lib.ts";
import { median, pairedMedian } from "./relay.ts";
import { tokenText } from "./scripted-openai.ts";

// The relay as the gateway opens it for a sandboxed pi: its plan from a models.json naming the
// model with a key, so each call has its placeholder swapped on the way, as pi's are.
const relayHost = `
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { relayPlan } from ${JSON.stringify(pathToFileURL(join(root, "src/sessions/relay/credentials.ts")).href)};
import { openRelay } from ${JSON.stringify(pathToFileURL(join(root, "src/sessions/relay/server.ts")).href)};
const [socket, baseUrl, dir] = process.argv.slice(-3);
const agent = join(dir, "agent");
mkdirSync(agent);
const model = { id: "scripted", api: "openai-completions" };
const providers = { bench: { baseUrl, api: "openai-completions", apiKey: "sk-bench-hop", models: [model] } };
writeFileSync(join(agent, "models.json"), JSON.stringify({ providers }));
const plan = relayPlan({}, {}, agent, "http://127.0.0.1:1");
openRelay(socket, plan, { refusal: () => undefined, counted: () => {} });
process.on("SIGTERM", () => process.exit(0));
setTimeout(() => console.log(plan.modelsJson.providers.bench.apiKey), 100);
`;

function firstLine(child: ChildProcess): Promise<string> {
	return new Promise((resolve, reject) => {
		let seen = "";
		child.stdout?.on("data", (chunk: Buffer) => {
			seen += chunk.toString("utf8");
			const end = seen.indexOf("\n");
			if (end !== -1) resolve(seen.slice(0, end));
		});
		child.once("exit", (code) => reject(new Error(`exited with ${code}: ${seen}`)));
	});
}

function freePort(): Promise<number> {
	return new Promise((resolve) => {
		const server = createServer().listen(0, "127.0.0.1", () => {
			const { port } = server.address() as { port: number };
			server.close(() => resolve(port));
		});
	});
}

const agent = new Agent({ keepAlive: true });
const socketAgent = new Agent({ keepAlive: true });

/** One streamed answer of `tokens` tokens from `url`: ms to the first token's bytes, tokens/s after it. */
function stream(
	url: string,
	tokens: number,
	key: string,
	socketPath?: string,
): Promise<{ firstMs: number; rate: number }> {
	const body = JSON.stringify({
		model: "scripted",
		stream: true,
		messages: [{ role: "user", content: `tokens: ${tokens}` }],
	});
	const first = tokenText(1);
	const last = tokenText(tokens);
	return new Promise((resolve, reject) => {
		const t0 = process.hrtime.bigint();
		let firstAt = 0n;
		let lastAt = 0n;
		let tail = "";
		const req = request(
			url,
			{
				method: "POST",
				agent: socketPath ? socketAgent : agent,
				socketPath,
				headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
			},
			(res) => {
				res.setEncoding("utf8");
				res.on("data", (chunk: string) => {
					const text = tail + chunk;
					if (!firstAt && text.includes(first)) firstAt = process.hrtime.bigint();
					if (!lastAt && text.includes(last)) lastAt = process.hrtime.bigint();
					tail = text.slice(-64);
				});
				res.on("end", () => {
					if (!firstAt || !lastAt) return reject(new Error(`${url}: incomplete answer (HTTP ${res.statusCode})`));
					resolve({
						firstMs: Number(firstAt - t0) / 1e6,
						rate: (tokens - 1) / (Number(lastAt - firstAt) / 1e9),
					});
				});
			},
		);
		req.on("error", reject);
		req.end(body);
	});
}

export async function relayHop(rounds: number, tokens: number): Promise<Record<string, string | number>[]> {
	const dir = mkdtempSync(join(tmpdir(), "pi-bench-relay-hop-"));
	const socket = join(dir, "relay.sock");
	const model = spawn(process.execPath, [join(root, "bench/scripted-openai.ts")], {
		stdio: ["ignore", "pipe", "inherit"],
	});
	let relay: ChildProcess | undefined;
	try {
		const baseUrl = await firstLine(model);
		relay = spawn(process.execPath, ["--input-type=module", "-e", relayHost, socket, baseUrl, dir], {
			stdio: ["ignore", "pipe", "inherit"],
		});
		// The placeholder pi would send: the relay swaps it for the key on the way.
		const placeholder = await firstLine(relay);
		const port = await freePort();
		const forwarder = pathToFileURL(join(root, "extensions/relay-forwarder.mjs"));
		forwarder.searchParams.set("socket", socket);
		forwarder.searchParams.set("port", String(port));
		await import(forwarder.href);
		const paths = [
			{ name: "direct", url: `${baseUrl}/chat/completions`, key: "sk-bench-hop" },
			{
				name: "relay hop (forwarder → unix socket → relay)",
				url: `http://127.0.0.1:${port}/bench/chat/completions`,
				key: placeholder,
			},
			{
				name: "relay by its unix socket (no forwarder)",
				url: "http://relay/bench/chat/completions",
				key: placeholder,
				socketPath: socket,
			},
		];
		const orders = [
			[0, 1, 2],
			[2, 1, 0],
			[1, 2, 0],
			[0, 2, 1],
			[1, 0, 2],
			[2, 0, 1],
		];
		const samples = paths.map(() => ({ first: [] as number[], rate: [] as number[] }));
		const relayPid = relay.pid as number;
		let relayCpu = 0;
		for (let round = -2; round < rounds; round++) {
			for (const i of orders[(round + 6) % 6] as number[]) {
				const path = paths[i] as (typeof paths)[number];
				const cpu = procStats(relayPid).cpuSeconds;
				const result = await stream(path.url, tokens, path.key, path.socketPath);
				if (round < 0) continue;
				if (i > 0) relayCpu += procStats(relayPid).cpuSeconds - cpu;
				samples[i]?.first.push(result.firstMs);
				samples[i]?.rate.push(result.rate);
			}
		}
		const direct = samples[0] as (typeof samples)[number];
		const rows: Record<string, string | number>[] = paths.map((path, i) => ({
			path: path.name,
			rounds,
			"first token p50 (ms)": median(samples[i]?.first ?? []),
			"tokens/s p50": Math.round(median(samples[i]?.rate ?? [])),
		}));
		for (const [i, path] of paths.entries()) {
			if (i === 0) continue;
			const s = samples[i] as (typeof samples)[number];
			rows.push({
				path: `${path.name} − direct / ÷ direct (paired, 95% interval)`,
				rounds,
				"first token p50 (ms)": pairedMedian(
					s.first.map((v, r) => v - (direct.first[r] as number)),
					2,
					true,
				),
				"tokens/s p50": pairedMedian(
					s.rate.map((v, r) => v / (direct.rate[r] as number)),
					3,
				),
			});
		}
		rows.push({
			path: "the relay's CPU per answer, mean (ms)",
			rounds,
			"first token p50 (ms)": ((relayCpu * 1000) / (2 * rounds)).toFixed(1),
			"tokens/s p50": "",
		});
		return rows;
	} finally {
		agent.destroy();
		socketAgent.destroy();
		relay?.kill();
		model.kill();
		rmSync(dir, { recursive: true, force: true });
	}
}
