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
import { createKey } from "../src/http/auth/keys.ts";
import { auth, type GatewayProcess, percentile, startGatewayProcess } from "./lib.ts";
import { scriptedModelId, startScriptedModel } from "./scripted-openai.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const provider = "bench";

async function readyInPool(gateway: GatewayProcess): Promise<number> {
	const text = await (await fetch(`${gateway.url}/metrics`, { headers: auth })).text();
	return Number(/^pi_gateway_warm_pool_size (\d+)/m.exec(text)?.[1] ?? 0);
}

/** Polls until the pool holds `count` ready pis (false after `ms`: the figure is then taken anyway). */
async function poolReady(gateway: GatewayProcess, count: number, ms = 60_000): Promise<boolean> {
	for (const deadline = Date.now() + ms; Date.now() < deadline; await sleep(20))
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

export async function poolCreate(sessions: number, starts: number): Promise<Record<string, string | number>[]> {
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
	const rows: Record<string, string | number>[] = [];
	try {
		// Start → healthy, and → the pool ready, over fresh gateways (a data dir each).
		const healthy: number[] = [];
		const pooled: number[] = [];
		for (let i = 0; i < starts; i++) {
			const t0 = performance.now();
			const gateway = await startGatewayProcess([...args]);
			try {
				while ((await fetch(`${gateway.url}/healthz`).catch(() => undefined))?.status !== 200) await sleep(5);
				healthy.push(performance.now() - t0);
				await poolReady(gateway, 2);
				pooled.push(performance.now() - t0);
			} finally {
				await gateway.stop();
			}
		}
		// A restart: the same data dir, whose compile cache (main.ts) the first start wrote.
		const restartDir = mkdtempSync(join(tmpdir(), "pi-bench-restart-"));
		const restarted: number[] = [];
		for (let i = 0; i <= starts; i++) {
			const t0 = performance.now();
			const gateway = await startGatewayProcess([...args, "--data-dir", restartDir]);
			try {
				while ((await fetch(`${gateway.url}/healthz`).catch(() => undefined))?.status !== 200) await sleep(5);
				if (i > 0) restarted.push(performance.now() - t0);
			} finally {
				await gateway.stop();
			}
		}
		rmSync(restartDir, { recursive: true, force: true });
		const gateway = await startGatewayProcess([...args]);
		try {
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
			const load = loadavg()[0]?.toFixed(1) ?? "?";
			const base50 = p50(base);
			const row = (kind: string, values: number[]) => ({
				"create kind": kind,
				"create → ready p50 (ms)": fixed(p50(values)),
				"× default": (p50(values) / base50).toFixed(2),
				creates: values.length,
				load,
			});
			rows.push(row("default model, the operator's pool", base));
			rows.push(row(`naming ${provider}/${scriptedModelId} (not the default), from the pool`, named));
			rows.push(row("a principal's first create, key made while running", newcomer));
			rows.push(row("a principal's first create, key there at start (cold)", known));
			rows.push({
				"create kind": "start → healthy / → pool of 2 ready",
				"create → ready p50 (ms)": `${fixed(p50(healthy))} / ${fixed(p50(pooled))}`,
				"× default": "",
				creates: starts,
				load,
			});
			rows.push({
				"create kind": "restart → healthy (the same data dir)",
				"create → ready p50 (ms)": fixed(p50(restarted)),
				"× default": "",
				creates: restarted.length,
				load,
			});
		} finally {
			await gateway.stop();
		}
	} finally {
		await model.close();
	}
	return rows;
}
