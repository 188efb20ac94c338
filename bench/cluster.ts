/**
 * Cluster mode (`--database-url`): what it costs to reach a session through a node that does not
 * own it, to resume a session on another node, and to fail over after a crash. Nodes run as their
 * own processes on one embedded PostgreSQL; real pi with the demo model, except the SSE table,
 * which uses the timestamping stub pi (bench/stub-pi.mjs) because it is about the gateway's hops.
 */
import type { ClusterNode } from "../test/helpers/cluster.ts";
import { type BenchCluster, ms, sleep, sql, until } from "./cluster-harness.ts";
import { now, percentile, readSse, stubPi } from "./lib.ts";

type Row = Record<string, string | number>;

function stats(values: number[]) {
	const sorted = [...values].sort((a, b) => a - b);
	return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1) ?? Number.NaN };
}

const echo = (h: BenchCluster, node: ClusterNode, id: string, text: string) =>
	h.call(node, "POST", `/v1/sessions/${id}/prompt?wait=true`, { message: `echo: ${text}` });

/** 1. A cheap read and a short run, each sent alternately to the owner and to the other node. */
export async function commandLatency(h: BenchCluster, samples: number): Promise<Row[]> {
	const db = await h.database();
	const { node: a } = await h.node("owner", db);
	const { node: b } = await h.node("other", db);
	const id = (await h.ok(a, "POST", "/v1/sessions", {}, 201)).id as string;
	const commands: [string, number, (via: ClusterNode, i: number) => Promise<{ status: number; ms: number }>][] = [
		["GET …/state", samples, (via) => h.call(via, "GET", `/v1/sessions/${id}/state`)],
		["POST …/prompt?wait=true (echo:)", Math.ceil(samples / 4), (via, i) => echo(h, via, id, `hi ${i}`)],
	];
	const rows: Row[] = [];
	for (const [command, n, send] of commands) {
		const times = { owner: [] as number[], other: [] as number[] };
		for (let i = -5; i < n; i++) {
			// Alternating which goes first, so neither path always follows the other.
			const order: ["owner" | "other", ClusterNode][] =
				i % 2
					? [
							["owner", a],
							["other", b],
						]
					: [
							["other", b],
							["owner", a],
						];
			for (const [path, via] of order) {
				const res = await send(via, i);
				if (res.status !== 200) throw new Error(`${command} via ${path}: HTTP ${res.status}`);
				if (i >= 0) times[path].push(res.ms); // the first five of each are warm-up
			}
		}
		const owner = stats(times.owner);
		const other = stats(times.other);
		rows.push({
			command,
			pi: "real (demo)",
			samples: n,
			"owner p50 ms": owner.p50,
			"owner p99 ms": owner.p99,
			"non-owner p50 ms": other.p50,
			"non-owner p99 ms": other.p99,
			"added p50 ms": other.p50 - owner.p50,
			"added p99 ms": other.p99 - owner.p99,
		});
	}
	await h.stopAll();
	return rows;
}

/** 1b. Per-event latency of one session's SSE stream read from its owner and from the other node. */
export async function eventLatency(h: BenchCluster, events: number, rate: number): Promise<Row[]> {
	const db = await h.database();
	const stub = { extra: [`--pi-command=${process.execPath} ${stubPi}`] };
	const { node: a } = await h.node("owner", db, stub);
	const { node: b } = await h.node("other", db, stub);
	const id = (await h.ok(a, "POST", "/v1/sessions", { persist: false }, 201)).id as string;
	const run = async (via: ClusterNode, count: number) => {
		const res = await h.openSse(via, `/v1/sessions/${id}/events?types=message_update,agent_settled`);
		const latencies: number[] = [];
		let opened: () => void = () => {};
		const open = new Promise<void>((r) => {
			opened = r;
		});
		const done = readSse(res, (event, data) => {
			if (event === "stream_open") opened();
			else if (event === "message_update") latencies.push(ms(now() - BigInt(JSON.parse(data).t)));
			return event === "agent_settled";
		});
		await open;
		// Always sent to the owner: only the stream's path differs between the two rows.
		await h.ok(a, "POST", `/v1/sessions/${id}/rpc`, { type: "emit", count, rate, size: 200 });
		await done;
		return latencies;
	};
	// Warm-up (discarded): the first frames through a fresh process pay for lazy compilation.
	await run(a, 2000);
	await run(b, 2000);
	const rows: Row[] = [];
	const measured = { owner: [] as number[], other: [] as number[] };
	for (const [path, via] of [
		["owner", a],
		["other", b],
		["owner", a],
		["other", b],
	] as const)
		measured[path].push(...(await run(via, events / 2)));
	for (const [label, path] of [
		["owner", "owner"],
		["non-owner (forwarded)", "other"],
	] as const) {
		const s = stats(measured[path]);
		rows.push({
			"stream read from": label,
			pi: "stub",
			"events/s": rate,
			events: measured[path].length,
			"p50 ms": s.p50,
			"p99 ms": s.p99,
			"max ms": s.max,
		});
	}
	const [o, n] = [stats(measured.owner), stats(measured.other)];
	rows.push({
		"stream read from": "added by the hop",
		pi: "",
		"events/s": "",
		events: "",
		"p50 ms": n.p50 - o.p50,
		"p99 ms": n.p99 - o.p99,
		"max ms": "",
	});
	await h.stopAll();
	return rows;
}

/** Creates `count` sessions on `node`, each with one settled run (a conversation to carry over). */
async function conversations(h: BenchCluster, node: ClusterNode, count: number): Promise<string[]> {
	const ids: string[] = [];
	for (let i = 0; i < count; i++) {
		const id = (await h.ok(node, "POST", "/v1/sessions", {}, 201)).id as string;
		if ((await echo(h, node, id, `first ${i}`)).status !== 200) throw new Error("the first prompt failed");
		ids.push(id);
	}
	return ids;
}

/** Waits until every one of `ids` is given back (owner NULL) with its conversation in the database. */
const released = (db: string, ids: string[]) =>
	until(
		async () =>
			(
				await sql(
					db,
					"SELECT count(*)::int AS n FROM sessions s JOIN conversations c USING (id) WHERE s.id = ANY($1) AND s.owner IS NULL",
					[ids],
				)
			)[0].n === ids.length,
		60_000,
		"the sessions to be released",
	);

/** First request on B for each session, one at a time; then a second prompt (pi live on B) as the baseline. */
async function resumeOn(h: BenchCluster, b: ClusterNode, ids: string[]) {
	const first: number[] = [];
	const second: number[] = [];
	for (const id of ids) {
		const res = await echo(h, b, id, "resumed");
		if (res.status !== 200 || res.json.text !== "resumed") throw new Error(`resume on B: HTTP ${res.status}`);
		first.push(res.ms);
		second.push((await echo(h, b, id, "again")).ms);
	}
	return { first: stats(first), second: stats(second) };
}

/** 2. A session stopped on A (idle hibernation, or A stopped with SIGTERM), resumed by its first prompt on B. */
export async function resume(h: BenchCluster, idleSamples: number, sigtermSamples: number): Promise<Row[]> {
	const db = await h.database();
	const { node: b } = await h.node("b", db);
	const rows: Row[] = [];
	const row = (how: string, n: number, r: Awaited<ReturnType<typeof resumeOn>>) => ({
		"stopped on A by": how,
		pi: "real (demo)",
		sessions: n,
		"first prompt on B p50 ms": r.first.p50,
		"p99 ms": r.first.p99,
		"max ms": r.first.max,
		"next prompt (pi live) p50 ms": r.second.p50,
	});
	const { node: a } = await h.node("a", db, { extra: ["--idle-timeout-ms=1000"] });
	const idle = await conversations(h, a, idleSamples);
	await released(db, idle);
	rows.push(row("idle hibernation (--idle-timeout-ms 1000)", idleSamples, await resumeOn(h, b, idle)));
	if (sigtermSamples > 0) {
		const { node: a2 } = await h.node("a", db);
		const live = await conversations(h, a2, sigtermSamples);
		await h.stop(a2);
		await released(db, live);
		rows.push(row("SIGTERM of A (sessions live until then)", sigtermSamples, await resumeOn(h, b, live)));
	}
	await h.stopAll();
	return rows;
}

/** 4. SIGKILL of the owner, then a prompt through the other node until it answers 200. */
export async function failover(h: BenchCluster, ttls: number[], samples: number): Promise<Row[]> {
	const rows: Row[] = [];
	for (const leaseTtlMs of ttls) {
		const db = await h.database();
		const { node: b } = await h.node("b", db, { leaseTtlMs });
		const times: number[] = [];
		let refusals = 0;
		for (let i = 0; i < samples; i++) {
			const { node: a } = await h.node("a", db, { leaseTtlMs });
			const id = (await h.ok(a, "POST", "/v1/sessions", {}, 201)).id as string;
			if ((await echo(h, b, id, "before")).status !== 200) throw new Error("prompt before the crash failed");
			// A random point in the renewal cycle (a third of the TTL), as a crash would land.
			await sleep(Math.random() * (leaseTtlMs / 3));
			const t0 = now();
			await h.kill(a);
			for (;;) {
				const res = await echo(h, b, id, "after");
				if (res.status === 200) break;
				if (res.status !== 503) throw new Error(`prompt after the crash: HTTP ${res.status}`);
				refusals++;
				await sleep(200); // faster than Retry-After, to see the moment it works
			}
			times.push(ms(now() - t0));
		}
		const s = stats(times);
		rows.push({
			"lease TTL ms": leaseTtlMs,
			pi: "real (demo)",
			kills: samples,
			"SIGKILL → answer p50 ms": s.p50,
			"min ms": Math.min(...times),
			"max ms": s.max,
			"503s before the answer": refusals,
		});
		await h.stopAll();
	}
	return rows;
}
