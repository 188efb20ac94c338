/**
 * Cluster mode in the default layout (a data dir per node, nothing shared but PostgreSQL): a
 * session's folder follows it to another node (src/cluster/folder-sync.ts). Failover after a
 * SIGKILL of the owner with a file a settled run wrote, what storing a 10,000-file folder costs
 * PostgreSQL per settled run (unchanged, one file changed), and restoring it on another node.
 * Real pi (demo model). `node bench/cluster-folders.ts [--smoke]` runs it alone; run.ts runs it
 * with the cluster tables (`--only=cluster-folders`).
 */
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ClusterNode } from "../test/helpers/cluster.ts";
import { folderNode } from "../test/helpers/folder-node.ts";
import { type BenchCluster, ms, type Row, sleep, sql, stats } from "./cluster-harness.ts";
import { now, table } from "./lib.ts";

/** Bytes PostgreSQL wrote to its WAL since `from` (every write of every table, the conversation's included). */
const walSince = async (db: string, from: string) =>
	Number((await sql(db, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::bigint AS n", [from]))[0].n);
const walNow = async (db: string) => (await sql(db, "SELECT pg_current_wal_lsn()::text AS lsn"))[0].lsn as string;

/** One file of `fill(cwd, files)`, halfway through. */
const middle = (files: number) => `pkg${Math.floor(files / 200)}/file${Math.floor(files / 2)}.ts`;

/** `files` small files (about 200 B each) in folders of 100, as an agent's checkout would hold. */
function fill(cwd: string, files: number): void {
	for (let i = 0; i < files; i++) {
		const dir = join(cwd, `pkg${Math.floor(i / 100)}`);
		if (i % 100 === 0) mkdirSync(dir, { recursive: true });
		writeFileSync(join(dir, `file${i}.ts`), `export const value${i} = ${i};\n`.repeat(6));
	}
}

const wait = (h: BenchCluster, node: ClusterNode, id: string, message: string) =>
	h.call(node, "POST", `/v1/sessions/${id}/prompt?wait=true`, { message });

/** kill -9 of the owner → a prompt through the survivor answered; the file the last settled run wrote is read back. */
export async function folderFailover(h: BenchCluster, leaseTtlMs: number, samples: number): Promise<Row[]> {
	const db = await h.database();
	const spec = { leaseTtlMs, sharedWorkspace: false };
	const { node: b } = await h.node("b", db, spec);
	const times: number[] = [];
	const leaseLeft: number[] = [];
	let readBack = 0;
	for (let i = 0; i < samples; i++) {
		const { node: a } = await h.node("a", db, spec);
		const id = (await h.ok(a, "POST", "/v1/sessions", {}, 201)).id as string;
		const wrote = await wait(h, b, id, `bash: mkdir -p out && printf 'sample ${i}\\n' > out/made.txt`);
		if (wrote.status !== 200) throw new Error(`the run before the crash: HTTP ${wrote.status}`);
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
			const res = await wait(h, b, id, "echo: after");
			if (res.status === 200) break;
			if (res.status !== 503) throw new Error(`prompt after the crash: HTTP ${res.status} ${JSON.stringify(res.json)}`);
			await sleep(200);
		}
		times.push(ms(now() - t0));
		leaseLeft.push(Number(lease.left));
		const file = await h.call(b, "GET", `/v1/sessions/${id}/files/content?path=out/made.txt`);
		if (file.status === 200 && file.json === `sample ${i}\n`) readBack++;
	}
	await h.stopAll();
	const s = stats(times);
	return [
		{
			layout: "default (data dir per node)",
			"lease TTL ms": leaseTtlMs,
			kills: samples,
			"SIGKILL → answer p50 ms": s.p50,
			"min ms": Math.min(...times),
			"max ms": s.max,
			"of which lease left p50 ms": stats(leaseLeft).p50,
			"after the lease p50 ms": stats(times.map((t, i) => t - (leaseLeft[i] as number))).p50,
			"file read back": `${readBack}/${samples}`,
		},
	];
}

/** Through a gateway node: PostgreSQL's cost of a settled run whose session works in a `files`-file folder. */
export async function folderCost(h: BenchCluster, files: number): Promise<Row[]> {
	const db = await h.database();
	const { node: a } = await h.node("a", db, { sharedWorkspace: false });
	const synced = async () =>
		Number(/^pi_gateway_folder_sync_bytes_total (\d+)/m.exec(await (await a.fetch("/metrics")).text())?.[1] ?? 0);
	const measure = async (what: string, id: string, message: string, before?: () => void): Promise<Row> => {
		before?.();
		const [wal, sent] = [await walNow(db), await synced()];
		const res = await wait(h, a, id, message);
		if (res.status !== 200) throw new Error(`${what}: HTTP ${res.status}`);
		return {
			"settled run": what,
			"answer ms": res.ms,
			"folder bytes sent": (await synced()) - sent,
			"WAL bytes (all writes)": await walSince(db, wal),
		};
	};
	const empty = (await h.ok(a, "POST", "/v1/sessions", {}, 201)).id as string;
	await wait(h, a, empty, "echo: warm");
	const baseline = await measure("empty folder (baseline: conversation, records)", empty, "echo: again");
	const big = await h.ok(a, "POST", "/v1/sessions", {}, 201);
	fill(big.cwd, files);
	// Older than a clock tick by the time it is read, as a checkout an agent made before this run.
	await sleep(1100);
	const first = await measure(`first store of ${files} files`, big.id, "echo: first");
	const unchanged = await measure(`${files} files, none changed`, big.id, "echo: unchanged");
	const again = await measure(`${files} files, none changed (again)`, big.id, "echo: unchanged again");
	const one = await measure(
		`${files} files, one changed (+30 B)`,
		big.id,
		`bash: echo '// one more line' >> ${middle(files)}`,
	);
	const rows = (await sql(db, "SELECT count(*)::int AS n FROM folder_entries WHERE session_id = $1", [big.id]))[0].n;
	await h.stopAll();
	for (const row of [first, unchanged, again, one]) row["manifest rows"] = rows;
	baseline["manifest rows"] = 0;
	return [baseline, first, unchanged, again, one];
}

/** The folder sync on its own (no gateway, nothing else writing): store, store again, one change, restore elsewhere. */
export async function folderStore(h: BenchCluster, files: number): Promise<Row[]> {
	const db = await h.database();
	const dir = mkdtempSync(join(tmpdir(), "pi-bench-folders-"));
	const [a, b] = [await folderNode(db, "a", dir), await folderNode(db, "b", dir)];
	try {
		const id = "ses_bench";
		await a.own(id);
		const session = a.session(id);
		fill(session.cwd, files);
		await sleep(1100);
		const rows: Row[] = [];
		const step = async (what: string, work: () => Promise<{ bytes?: number; read?: number; restored?: number }>) => {
			const wal = await walNow(db);
			const t0 = now();
			const out = await work();
			rows.push({
				step: what,
				ms: ms(now() - t0),
				"bytes sent": out.bytes ?? "",
				"files read": out.read ?? "",
				"WAL bytes": await walSince(db, wal),
			});
		};
		await step(`first store, ${files} files`, () => a.sync.sync(id));
		await step("store again, none changed", () => a.sync.sync(id));
		await step("store again, one changed", async () => {
			appendFileSync(join(session.cwd, middle(files)), "// one more line\n");
			return await a.sync.sync(id);
		});
		await b.own(id);
		await step(`restore on another node, ${files} files`, async () => {
			const placed = await b.sync.place({
				id,
				cwd: session.cwd,
				persist: true,
				options: { persist: true },
				piState: {},
				createdAt: new Date().toISOString(),
				lastActivityAt: Date.now(),
				lastSeq: 0,
			});
			if (!placed.report?.complete) throw new Error(`restore incomplete: ${placed.report?.detail}`);
			return {};
		});
		return rows;
	} finally {
		await a.close();
		await b.close();
		rmSync(dir, { recursive: true, force: true });
	}
}

export async function runFolderBenchmarks(h: BenchCluster, smoke: boolean): Promise<void> {
	const files = smoke ? 500 : 10_000;
	console.log(
		table(
			`C5a. Cluster, default layout: storing a ${files}-file folder (FolderSync alone)`,
			await folderStore(h, files),
		),
	);
	console.log(
		table(
			`C5b. Cluster, default layout: PostgreSQL's cost of a settled run (one node, ${files}-file folder)`,
			await folderCost(h, files),
		),
	);
	const ttl = Number(process.env.LEASE_TTL_MS ?? (smoke ? 2000 : 10_000));
	console.log(
		table(
			"C5c. Cluster, default layout: failover after SIGKILL of the owner (prompt through the survivor)",
			await folderFailover(h, ttl, smoke ? 1 : 5),
		),
	);
}

if (import.meta.url === `file://${process.argv[1]}`) {
	const { BenchCluster } = await import("./cluster-harness.ts");
	const h = await BenchCluster.start();
	try {
		await runFolderBenchmarks(h, process.argv.includes("--smoke"));
	} finally {
		await h.close();
	}
}
