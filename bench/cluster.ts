/**
 * Cluster mode (`--database-url`): what it costs to reach a session through a node that does not
 * own it (a command, and SSE events). Nodes run as their
 * own processes on one embedded PostgreSQL; real pi with the demo model, except the SSE table,
 * which uses the timestamping stub pi (bench/stub-pi.mjs) because it is about the gateway's hops.
 * Resume and failover: bench/cluster-recovery.ts; many registered sessions: cluster-registry.ts.
 */
import pg from "pg";
import type { ClusterNode } from "../test/helpers/cluster.ts";
import { type BenchCluster, echo, ms, type Row, stats } from "./cluster-harness.ts";
import { now, readSse, stubPi } from "./lib.ts";

/**
 * 1. A cheap read and a short run, each sent alternately to the owner and to the other node, after
 * `warmUp` of each (not counted; the smoke pass sends 2).
 */
export async function commandLatency(h: BenchCluster, samples: number, warmUp = 5): Promise<Row[]> {
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
		for (let i = -warmUp; i < n; i++) {
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
				if (i >= 0) times[path].push(res.ms); // the first `warmUp` of each are warm-up
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
	const lookup = stats(await ownerLookup(db, id, samples));
	rows.push({
		command: "of which: the owner lookup (PostgresStore.ownerOf's one SELECT, from a pg client)",
		pi: "none",
		samples,
		"owner p50 ms": "",
		"owner p99 ms": "",
		"non-owner p50 ms": "",
		"non-owner p99 ms": "",
		"added p50 ms": lookup.p50,
		"added p99 ms": lookup.p99,
	});
	await h.stopAll();
	return rows;
}

/**
 * What a non-owner asks PostgreSQL before every forward: the session's owner and its lease, one
 * plain SELECT (ownerOf; no lock), on one open connection.
 */
async function ownerLookup(db: string, id: string, samples: number): Promise<number[]> {
	const client = new pg.Client({ connectionString: db });
	await client.connect();
	try {
		const times: number[] = [];
		for (let i = -5; i < samples; i++) {
			const t0 = now();
			await client.query(
				"SELECT s.owner, n.url FROM sessions s JOIN nodes n ON n.id = s.owner WHERE s.id = $1 AND n.lease_until > now()",
				[id],
			);
			if (i >= 0) times.push(ms(now() - t0));
		}
		return times;
	} finally {
		await client.end();
	}
}

/**
 * 1b. Per-event latency of one session's SSE stream read from its owner and from the other node,
 * after `warmUp` events through each (not counted; at 1,000 events/s the default is 2 s a path).
 */
export async function eventLatency(h: BenchCluster, events: number, rate: number, warmUp = 2000): Promise<Row[]> {
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
	await run(a, warmUp);
	await run(b, warmUp);
	const rows: Row[] = [];
	const measured = { owner: [] as number[], other: [] as number[] };
	// Short rounds, alternating: a busy moment of the machine lands on both paths alike.
	const rounds = 10;
	for (let i = 0; i < rounds; i++) {
		measured.owner.push(...(await run(a, events / rounds)));
		measured.other.push(...(await run(b, events / rounds)));
	}
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
