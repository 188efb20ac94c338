/**
 * Benchmark 18 (issue 45 item 2): a fleet of sessions on one machine. A gateway in the default
 * start (README's: its warm pool, the idle timeout, at most 32 live pi) is grown to each size in
 * turn (100, 300, 1,000 in a full run), one create at a time as clients would make them, while
 * `active` sessions of it are used: at each size every active session is prompted twice
 * (`count: 20`), the first prompt finding it as the fleet left it (hibernated or evicted past the
 * live cap: its wake is in the figure), the second live. Beside them: create → ready of the
 * creates that grew the fleet to that size, GET /v1/sessions (a page of 100) and the PSS of the
 * gateway alone and of its whole tree after a full GC. "Flat" is the p50 at the largest size over
 * the p50 at the smallest (the goal: within 1.5×).
 */
import { loadavg } from "node:os";
import {
	api,
	auth,
	countPrompt,
	type GatewayProcess,
	now,
	percentile,
	settledMemory,
	startGatewayProcess,
} from "./lib.ts";
import { pssBytes, treePssBytes } from "./peers-proc.ts";

const ms = (from: bigint) => Number(now() - from) / 1e6;
const mb = (bytes: number) => bytes / 2 ** 20;
const p50 = (values: number[]) =>
	percentile(
		[...values].sort((a, b) => a - b),
		50,
	);

/** Sessions with a pi now (every status but stopped, exited and crashed), from /metrics. */
async function liveCount(gateway: GatewayProcess): Promise<number> {
	const text = await (await fetch(`${gateway.url}/metrics`, { headers: auth })).text();
	let live = 0;
	for (const [, status, n] of text.matchAll(/^pi_gateway_sessions\{status="(\w+)"\} (\d+)/gm))
		if (!["stopped", "exited", "crashed"].includes(status as string)) live += Number(n);
	return live;
}

export interface FleetOptions {
	sizes: number[];
	/** Sessions of the fleet in use (the first ones made). */
	active: number;
	/** GET /v1/sessions calls timed at each size. */
	lists: number;
	args?: string[];
}

export async function fleet({ sizes, active, lists, args = [] }: FleetOptions) {
	const largest = Math.max(...sizes);
	const gateway = await startGatewayProcess(["--max-sessions", String(largest + active), ...args]);
	const rows: Record<string, string | number>[] = [];
	try {
		const ids: string[] = [];
		for (const size of sizes) {
			const loadBefore = loadavg()[0] ?? 0;
			const creates: number[] = [];
			while (ids.length < size) {
				const started = now();
				const { id } = await api(`${gateway.url}/v1/sessions`, "POST", {});
				creates.push(ms(started));
				ids.push(id);
			}
			const listed: number[] = [];
			for (let i = 0; i < lists; i++) {
				const started = now();
				await api(`${gateway.url}/v1/sessions?limit=100`, "GET");
				listed.push(ms(started));
			}
			const found: number[] = [];
			const again: number[] = [];
			const settled: number[] = [];
			for (const id of ids.slice(0, active)) {
				found.push((await countPrompt(gateway, id)).firstDeltaMs);
				const live = await countPrompt(gateway, id);
				again.push(live.firstDeltaMs);
				settled.push(live.totalMs);
			}
			await settledMemory(gateway);
			const tree = treePssBytes(gateway.pid);
			rows.push({
				sessions: size,
				"create → ready p50 ms": p50(creates),
				"create p90 ms": percentile(
					[...creates].sort((a, b) => a - b),
					90,
				),
				"list (100) p50 ms": p50(listed),
				"first delta, as found p50 ms": p50(found),
				"first delta, live p50 ms": p50(again),
				"prompt → settled, live p50 ms": p50(settled),
				"live pi": await liveCount(gateway),
				"gateway PSS (MB)": mb(pssBytes(gateway.pid)),
				"tree PSS (MB)": mb(tree),
				"tree PSS / session (MB)": mb(tree) / size,
				"load before → after": `${loadBefore.toFixed(1)} → ${(loadavg()[0] ?? 0).toFixed(1)}`,
			});
		}
	} finally {
		await gateway.stop();
	}
	const first = rows[0] as Record<string, number>;
	const last = rows.at(-1) as Record<string, number>;
	const flat = [
		"create → ready p50 ms",
		"list (100) p50 ms",
		"first delta, live p50 ms",
		"tree PSS / session (MB)",
	].map((column) => ({
		figure: column,
		[`at ${first.sessions}`]: first[column] as number,
		[`at ${last.sessions}`]: last[column] as number,
		[`${last.sessions} / ${first.sessions}`]: (last[column] as number) / (first[column] as number),
	}));
	return { rows, flat };
}
