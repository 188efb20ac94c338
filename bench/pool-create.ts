/**
 * Benchmark 17 (issue 45 item 3): create → ready when every create is served by the warm pool.
 * One gateway in the default start (real pi, the demo model as default, its warm pool of 2, the
 * sandbox as the machine gives it) whose agent folder also knows a scripted OpenAI-compatible
 * model on 127.0.0.1 (bench/scripted-openai.ts). Each create waits until the pool is full again
 * first, so the figure is a create the pool can serve, kind by kind:
 * - the default model (`{}`);
 * - naming that other model by provider and id, as API clients do (set on a pooled pi);
 * - a principal's first create, its key made while the gateway runs (its area's pi is started
 *   when the keys file is read again);
 * - a principal's first create, its key there at start (no pi can wait in an area not known yet:
 *   a cold start, as before).
 * And start → healthy: from spawning the gateway to its first 200 on /healthz (the pool starts
 * after listening), and to its pool being ready, over `starts` starts.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { bundleFile, bundleIsCurrent } from "../scripts/bundle-current.ts";
import { createKey } from "../src/http/auth/keys.ts";
import { auth, type GatewayProcess, percentile, smokeRun, startGatewayProcess } from "./lib.ts";
import { scriptedModelId, startScriptedModel } from "./scripted-openai.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const provider = "bench";

async function readyInPool(gateway: GatewayProcess): Promise<number> {
	const text = await (await fetch(`${gateway.url}/metrics`, { headers: auth })).text();
	return Number(/^pi_gateway_warm_pool_size (\d+)/m.exec(text)?.[1] ?? 0);
}

/**
 * Every 20 ms (a smoke pass: 100 ms, each poll is a /metrics the gateway renders, and it polls
 * through seconds of pool fills on a busy machine).
 */
const pollMs = smokeRun ? 100 : 20;

/** Polls until the pool holds `count` ready pis (false after `ms`: the figure is then taken anyway). */
async function poolReady(gateway: GatewayProcess, count: number, ms = 60_000): Promise<boolean> {
	for (const deadline = Date.now() + ms; Date.now() < deadline; await sleep(pollMs))
		if ((await readyInPool(gateway)) >= count) return true;
	return false;
}

async function createMs(gateway: GatewayProcess, body: unknown, secret?: string): Promise<number> {
	const headers = { "content-type": "application/json", ...(secret ? { authorization: `Bearer ${secret}` } : auth) };
	const t0 = performance.now();
	const res = await fetch(`${gateway.url}/v1/sessions`, { method: "POST", headers, body: JSON.stringify(body) });
	const ms = performance.now() - t0;
	if (res.status !== 201) throw new Error(`create ${JSON.stringify(body)}: ${res.status} ${await res.text()}`);
	await res.arrayBuffer();
	return ms;
}

const p50 = (values: number[]) =>
	percentile(
		[...values].sort((a, b) => a - b),
		50,
	);
const fixed = (ms: number) => (ms < 10 ? ms.toFixed(1) : ms.toFixed(0));

/**
 * `shared` (the smoke pass, one start): two gateways instead of four. The one start → healthy
 * sample is a first start in the restart data dir (empty then, as a fresh one), and the creates are
 * timed on it; then the restart sample there.
 */
export async function poolCreate(
	sessions: number,
	starts: number,
	shared = false,
): Promise<Record<string, string | number>[]> {
	const model = await startScriptedModel();
	const root = mkdtempSync(join(tmpdir(), "pi-bench-pool-create-"));
	const agent = join(root, "agent");
	mkdirSync(agent);
	const scripted = { id: scriptedModelId, name: scriptedModelId, contextWindow: 128_000, maxTokens: 16_384 };
	const providers = {
		[provider]: { baseUrl: model.baseUrl, api: "openai-completions", apiKey: "bench", models: [scripted] },
	};
	writeFileSync(join(agent, "models.json"), JSON.stringify({ providers }));
	const keysFile = join(root, "keys.json");
	const scopes: ("sessions:read" | "sessions:write")[] = ["sessions:read", "sessions:write"];
	const atStart = Array.from({ length: sessions }, (_, i) => createKey(keysFile, `early${i}`, scopes).secret);
	const args = ["--pi-agent-dir", agent, "--warm-pool", "2", "--keys-file", keysFile];
	const healthyAfter = async (gateway: GatewayProcess) => {
		while ((await fetch(`${gateway.url}/healthz`).catch(() => undefined))?.status !== 200) await sleep(5);
	};
	const healthy: number[] = [];
	const pooled: number[] = [];
	// The bin's start (dist/pi-gateway.mjs, what an installed pi-gateway runs), beside npm start's.
	const bundle = bundleFile;
	// Not a build older than the sources: its figures would not be this code's.
	const built = bundleIsCurrent();
	const healthyBin: number[] = [];
	const pooledBin: number[] = [];
	const restarted: number[] = [];
	/** Start → healthy, and → the pool ready, in a fresh data dir (a new one unless given); left running. */
	const firstStart = async (dataDir?: string, entry?: string) => {
		const t0 = performance.now();
		// A first start: not even the smoke pass gives it a compile cache (lib.ts).
		const gateway = await startGatewayProcess(dataDir ? [...args, "--data-dir", dataDir] : [...args], {
			coldCache: true,
			...(entry ? { entry } : {}),
		});
		try {
			await healthyAfter(gateway);
			(entry ? healthyBin : healthy).push(performance.now() - t0);
			await poolReady(gateway, 2);
			(entry ? pooledBin : pooled).push(performance.now() - t0);
			return gateway;
		} catch (error) {
			await gateway.stop();
			throw error;
		}
	};
	// A restart: the same data dir, whose compile cache (main.ts) the first start wrote.
	const restartDir = mkdtempSync(join(tmpdir(), "pi-bench-restart-"));
	const restart = async (counted: boolean) => {
		const t0 = performance.now();
		const gateway = await startGatewayProcess([...args, "--data-dir", restartDir]);
		try {
			await healthyAfter(gateway);
			if (counted) restarted.push(performance.now() - t0);
		} finally {
			await gateway.stop();
		}
	};
	/** Each kind of create, `sessions` times, every one served by a full pool. */
	const creates = async (gateway: GatewayProcess) => {
		await poolReady(gateway, 2);
		const base: number[] = [];
		const named: number[] = [];
		const newcomer: number[] = [];
		const known: number[] = [];
		for (let i = 0; i < sessions; i++) {
			await poolReady(gateway, 2);
			base.push(await createMs(gateway, {}));
			await poolReady(gateway, 2);
			named.push(await createMs(gateway, { provider, model: scriptedModelId }));
		}
		for (let i = 0; i < sessions; i++) {
			// The principals' pools: at most 2 (--warm-pool), each one pi, plus the operator's 2.
			const expected = 2 + Math.min(i + 1, 2);
			const secret = createKey(keysFile, `late${i}`, scopes).secret;
			// Its first request reads the keys file again at once (else the poll, within 500 ms), which
			// starts its area's pi (and closes the least recent principal's pool): then it is waited for.
			await fetch(`${gateway.url}/v1/sessions`, { headers: { authorization: `Bearer ${secret}` } });
			await poolReady(gateway, expected);
			newcomer.push(await createMs(gateway, {}, secret));
			await poolReady(gateway, expected);
			known.push(await createMs(gateway, {}, atStart[i]));
		}
		return { base, named, newcomer, known, load: loadavg()[0]?.toFixed(1) ?? "?" };
	};
	let timed: Awaited<ReturnType<typeof creates>>;
	try {
		if (shared) {
			// The smoke pass (one start): the first start, in the restart data dir, is the gateway the
			// creates are timed on; then one restart there. Two gateways and one pool filled, not four.
			const gateway = await firstStart(restartDir);
			try {
				timed = await creates(gateway);
			} finally {
				await gateway.stop();
			}
			await restart(true);
			if (built) await (await firstStart(undefined, bundle)).stop();
		} else {
			// Start → healthy over fresh gateways (a data dir each); then restarts, after one that
			// writes the restart data dir's compile cache; then the creates on a gateway of their own.
			// npm start's and the bin's alternately, so both meet the same load.
			for (let i = 0; i < starts; i++) {
				await (await firstStart()).stop();
				if (built) await (await firstStart(undefined, bundle)).stop();
			}
			for (let i = 0; i <= starts; i++) await restart(i > 0);
			const gateway = await startGatewayProcess([...args]);
			try {
				timed = await creates(gateway);
			} finally {
				await gateway.stop();
			}
		}
	} finally {
		await model.close();
		rmSync(restartDir, { recursive: true, force: true });
	}
	const { base, named, newcomer, known, load } = timed;
	const base50 = p50(base);
	const row = (kind: string, values: number[]) => ({
		"create kind": kind,
		"create → ready p50 (ms)": fixed(p50(values)),
		"× default": (p50(values) / base50).toFixed(2),
		creates: values.length,
		load,
	});
	const rows: Record<string, string | number>[] = [
		row("default model, the operator's pool", base),
		row(`naming ${provider}/${scriptedModelId} (not the default), from the pool`, named),
		row("a principal's first create, key made while running", newcomer),
		row("a principal's first create, key there at start (cold)", known),
		{
			"create kind": "start → healthy / → pool of 2 ready, npm start (src/)",
			"create → ready p50 (ms)": `${fixed(p50(healthy))} / ${fixed(p50(pooled))}`,
			"× default": "",
			creates: healthy.length,
			load,
		},
		{
			"create kind": "start → healthy / → pool of 2 ready, the bin (dist/pi-gateway.mjs)",
			"create → ready p50 (ms)": built
				? `${fixed(p50(healthyBin))} / ${fixed(p50(pooledBin))}`
				: "not built, or older than src/ (npm run build)",
			"× default": "",
			creates: healthyBin.length,
			load,
		},
		{
			"create kind": "restart → healthy (the same data dir)",
			"create → ready p50 (ms)": fixed(p50(restarted)),
			"× default": "",
			creates: restarted.length,
			load,
		},
	];
	return rows;
}
