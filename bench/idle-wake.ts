/**
 * Benchmark 16 (issue 45 item 1): what an idle session costs once --idle-timeout-ms has taken its
 * pi, and what waking it costs. A gateway in the default start (README's: its warm pool, the
 * default idle timeout) gets N sessions, each used once (`echo:`), then left alone past the idle
 * timeout. Memory is PSS after a full GC of the gateway, of the gateway and every process under it,
 * split into the gateway's own, the sessions' pi processes (by the pids GET /v1/sessions gives) and
 * the rest (the warm pool's pi); per session is what the gateway and the sessions' processes hold
 * above the gateway before any session, over N, and the whole tree over N is beside it. Then each
 * session is prompted (`count: 20`) twice in a row: the first prompt wakes it (prompt → first
 * text_delta, pi's cold start included), the second finds it live; the pair is on the same session
 * under the same load, so their difference is the wake's.
 */
import { loadavg } from "node:os";
import { api, auth, countPrompt, type GatewayProcess, percentile, settledMemory, startGatewayProcess } from "./lib.ts";
import { pssBytes, treePssBytes } from "./peers-proc.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mb = (bytes: number) => bytes / 2 ** 20;

/** The warm pool's ready pi (its gauge counts those started and not taken). */
async function poolSize(gateway: GatewayProcess): Promise<number> {
	const text = await (await fetch(`${gateway.url}/metrics`, { headers: auth })).text();
	return Number(/^pi_gateway_warm_pool_size (\d+)/m.exec(text)?.[1] ?? 0);
}

interface TreeMemory {
	/** The gateway and every process under it. */
	tree: number;
	/** The gateway's own process. */
	gateway: number;
	/** The sessions' pi processes (and what they started), by the pids GET /v1/sessions gives. */
	sessions: number;
	/** The rest: the warm pool's pi processes (and its sandboxes' wrappers). */
	pool: number;
	poolSize: number;
}

/** PSS of the gateway's tree, split, after a full GC of the gateway. */
async function settledTree(gateway: GatewayProcess): Promise<TreeMemory> {
	await settledMemory(gateway);
	const listed = await api(`${gateway.url}/v1/sessions?limit=100`, "GET");
	const pids = (listed.sessions as { pid: number | null }[]).flatMap((s) => (s.pid ? [s.pid] : []));
	const tree = treePssBytes(gateway.pid);
	const gatewayOnly = pssBytes(gateway.pid);
	const sessions = pids.reduce((sum, pid) => sum + treePssBytes(pid), 0);
	return {
		tree,
		gateway: gatewayOnly,
		sessions,
		pool: tree - gatewayOnly - sessions,
		poolSize: await poolSize(gateway),
	};
}

export interface IdleWakeOptions {
	sessions: number;
	/** How long the sessions are left alone (ms); the default start hibernates them after 60 s. */
	idleMs: number;
	/** Extra gateway flags (the smoke pass shortens --idle-timeout-ms). */
	args?: string[];
	/**
	 * The smoke pass: idle only until every session is hibernated (at most idleMs; polled every
	 * 100 ms), and the gateway with its full pool left 0.5 s instead of 3 s before the baseline.
	 */
	untilHibernated?: boolean;
	/**
	 * Wake each session only once the warm pool has a ready pi (where a pooled pi can wake it: the
	 * `--workspace-root` layout), as table 17 times creates that find the pool full: what a wake
	 * costs when the pool has what it needs, not how fast one refills after a burst.
	 */
	awaitPool?: boolean;
}

export async function idleWake({
	sessions,
	idleMs,
	args = [],
	untilHibernated = false,
	awaitPool = false,
}: IdleWakeOptions) {
	const gateway = await startGatewayProcess(args);
	try {
		const loadBefore = loadavg()[0] ?? 0;
		// The warm pool fills after listening: the baseline is the gateway idling with a full pool.
		for (const deadline = Date.now() + 60_000; Date.now() < deadline && (await poolSize(gateway)) === 0; )
			await sleep(200);
		await sleep(untilHibernated ? 500 : 3000);
		const empty = await settledTree(gateway);
		const ids: string[] = [];
		for (let i = 0; i < sessions; i++) {
			const { id } = await api(`${gateway.url}/v1/sessions`, "POST", {});
			await api(`${gateway.url}/v1/sessions/${id}/prompt?wait=true`, "POST", { message: `echo: session ${i}` });
			ids.push(id);
		}
		const live = await settledTree(gateway);
		const idleFrom = performance.now();
		const stopped = async () =>
			(await Promise.all(ids.map(async (id) => (await api(`${gateway.url}/v1/sessions/${id}`, "GET")).status))).filter(
				(s) => s === "stopped",
			).length;
		if (untilHibernated) while (performance.now() - idleFrom < idleMs && (await stopped()) < sessions) await sleep(100);
		else await sleep(idleMs);
		const idleSeconds = untilHibernated ? ((performance.now() - idleFrom) / 1000).toFixed(1) : idleMs / 1000;
		const hibernated = await stopped();
		const idle = await settledTree(gateway);
		const woken: number[] = [];
		const warm: number[] = [];
		for (const id of ids) {
			if (awaitPool)
				for (const deadline = Date.now() + 60_000; Date.now() < deadline && (await poolSize(gateway)) === 0; )
					await sleep(100);
			woken.push((await countPrompt(gateway, id)).firstDeltaMs);
			warm.push((await countPrompt(gateway, id)).firstDeltaMs);
		}
		const diffs = woken.map((w, i) => w - (warm[i] as number)).sort((a, b) => a - b);
		woken.sort((a, b) => a - b);
		warm.sort((a, b) => a - b);
		// Per session: what the gateway and the sessions' processes hold above the gateway before any
		// session, over N. The warm pool is apart: a fixed cost of the start (it grows for a burst of
		// creates and shrinks after 10 minutes without one), not of the sessions.
		const perSession = (m: TreeMemory) => mb(m.gateway - empty.gateway + m.sessions) / sessions;
		const memory: Record<string, string | number>[] = [empty, live, idle].map((m, i) => ({
			when: ["no session yet", `${sessions} used once, live`, `idle ${idleSeconds} s`][i] as string,
			hibernated: i === 2 ? `${hibernated}/${sessions}` : "",
			"tree PSS (MB)": mb(m.tree),
			"gateway (MB)": mb(m.gateway),
			"sessions' pi (MB)": mb(m.sessions),
			"warm pool (MB)": `${mb(m.pool).toFixed(1)} (${m.poolSize} pi)`,
			"per session (MB)": i === 0 ? "" : perSession(m),
			"tree / N (MB)": i === 0 ? "" : mb(m.tree) / sessions,
		}));
		const wake: Record<string, string | number>[] = [
			{
				prompts: sessions,
				"woken: first delta p50 ms": percentile(woken, 50),
				"woken p90 ms": percentile(woken, 90),
				"live: first delta p50 ms": percentile(warm, 50),
				"live p90 ms": percentile(warm, 90),
				"woken − live, paired p50 ms": percentile(diffs, 50),
				"woken / live p50": percentile(woken, 50) / percentile(warm, 50),
				"load (1 min) before → after": `${loadBefore.toFixed(1)} → ${(loadavg()[0] ?? 0).toFixed(1)}`,
			},
		];
		return { memory, wake };
	} finally {
		await gateway.stop();
	}
}
