/**
 * Cluster mode, when a session changes node: resumed on another node after it was stopped (idle
 * hibernation, SIGTERM of its node), and taken over after its node was killed. Real pi, demo model.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ClusterNode } from "../test/helpers/cluster.ts";
import { type BenchCluster, echo, ms, type Row, sleep, sql, stats, until } from "./cluster-harness.ts";
import { api, now, startGatewayProcess } from "./lib.ts";

/** Creates `count` sessions on `node`, each with one settled run (a conversation to carry over). */
async function conversations(h: BenchCluster, node: ClusterNode, count: number): Promise<string[]> {
	const ids: string[] = [];
	for (let i = 0; i < count; i++) {
		const id = (await h.ok(node, "POST", "/v1/sessions", {}, 201)).id as string;
		const first = await echo(h, node, id, `first ${i}`);
		if (first.status !== 200)
			throw new Error(`the first prompt failed: HTTP ${first.status} ${JSON.stringify(first.json)}`);
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

/** The same on one gateway without a cluster (SQLite): what a resume costs without claim and restore. */
async function singleNodeResume(samples: number) {
	const gateway = await startGatewayProcess([
		"--idle-timeout-ms",
		"1000",
		"--data-dir",
		mkdtempSync(join(tmpdir(), "pi-bench-single-")),
	]);
	try {
		const url = (path: string) => `${gateway.url}/v1/sessions${path}`;
		const prompt = (id: string, text: string) =>
			api(url(`/${id}/prompt?wait=true`), "POST", { message: `echo: ${text}` });
		const ids: string[] = [];
		for (let i = 0; i < samples; i++) {
			ids.push((await api(url(""), "POST", {})).id);
			await prompt(ids[i] as string, `first ${i}`);
		}
		await until(
			async () => (await api(url(""), "GET")).sessions.every((s: { status: string }) => s.status === "stopped"),
			60_000,
			"hibernation",
		);
		const first: number[] = [];
		const second: number[] = [];
		for (const id of ids) {
			let t0 = now();
			await prompt(id, "resumed");
			first.push(ms(now() - t0));
			t0 = now();
			await prompt(id, "again");
			second.push(ms(now() - t0));
		}
		return { first: stats(first), second: stats(second) };
	} finally {
		await gateway.stop();
	}
}

/**
 * 2. A session stopped on A (idle hibernation, or A stopped with SIGTERM), resumed by its first
 * prompt on B; for scale, the same resume on A itself (a released session is claimed anew there
 * too) and on a single gateway without a cluster.
 */
export async function resume(h: BenchCluster, samples: number, full: boolean): Promise<Row[]> {
	const db = await h.database();
	// Room for every resumed session: no hibernation of an older one inside a measurement.
	const { node: b } = await h.node("b", db, { extra: ["--max-live-sessions=100"] });
	const rows: Row[] = [];
	const row = (how: string, where: string, n: number, r: Awaited<ReturnType<typeof resumeOn>>) => ({
		"stopped by": how,
		"first prompt sent to": where,
		pi: "real (demo)",
		sessions: n,
		"first prompt p50 ms": r.first.p50,
		"p99 ms": r.first.p99,
		"max ms": r.first.max,
		"next prompt (pi live) p50 ms": r.second.p50,
	});
	const idleFlag = "--idle-timeout-ms=1000";
	const { node: a } = await h.node("a", db, { extra: [idleFlag] });
	const idle = await conversations(h, a, samples);
	await released(db, idle);
	rows.push(row("idle hibernation on A (1 s)", "B", samples, await resumeOn(h, b, idle)));
	if (full) {
		const again = await conversations(h, a, samples);
		await released(db, again);
		rows.push(row("idle hibernation on A (1 s)", "A (same node)", samples, await resumeOn(h, a, again)));
		const { node: a2 } = await h.node("a", db);
		const live = await conversations(h, a2, samples);
		await h.stop(a2);
		await released(db, live);
		rows.push(row("SIGTERM of A", "B", samples, await resumeOn(h, b, live)));
	}
	await h.stopAll();
	if (full)
		rows.push(
			row("idle hibernation (1 s)", "the same gateway, no cluster (SQLite)", samples, await singleNodeResume(samples)),
		);
	return rows;
}

/**
 * 4. SIGKILL of the owner, then a prompt through the other node until it answers 200. The time
 * splits into what was left of the dead node's lease (read from the database just before the
 * kill) and the rest: the takeover, pi's start and the run.
 */
export async function failover(h: BenchCluster, ttls: number[], samples: number): Promise<Row[]> {
	const rows: Row[] = [];
	for (const leaseTtlMs of ttls) {
		const db = await h.database();
		const { node: b } = await h.node("b", db, { leaseTtlMs });
		const times: number[] = [];
		const leaseLeft: number[] = [];
		let refusals = 0;
		for (let i = 0; i < samples; i++) {
			const { node: a } = await h.node("a", db, { leaseTtlMs });
			const id = (await h.ok(a, "POST", "/v1/sessions", {}, 201)).id as string;
			if ((await echo(h, b, id, "before")).status !== 200) throw new Error("prompt before the crash failed");
			// A random point in the renewal cycle (a third of the TTL), as a crash would land.
			await sleep(Math.random() * (leaseTtlMs / 3));
			const [lease] = await sql(
				db,
				"SELECT extract(epoch FROM lease_until - now()) * 1000 AS left FROM nodes WHERE id = $1",
				[a.name],
			);
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
			leaseLeft.push(Number(lease.left));
		}
		const s = stats(times);
		const rest = stats(times.map((t, i) => t - (leaseLeft[i] as number)));
		rows.push({
			"lease TTL ms": leaseTtlMs,
			pi: "real (demo)",
			kills: samples,
			"SIGKILL → answer p50 ms": s.p50,
			"min ms": Math.min(...times),
			"max ms": s.max,
			"of which lease left p50 ms": stats(leaseLeft).p50,
			"after the lease p50 ms": rest.p50,
			"503s before the answer": refusals,
		});
		await h.stopAll();
	}
	return rows;
}
