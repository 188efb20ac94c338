/**
 * 3. Many registered, stopped sessions in one cluster: the rows are written straight into
 * PostgreSQL (owner NULL: released, as a node leaves them), cloned from a record a real node
 * saved, so they are in the store's own format. Measured on a node started on an empty registry
 * and on one started on the full registry: its start, its memory, GET /v1/sessions (its first
 * page, what a call without a limit answers) and every page walked by cursor.
 */
import { randomUUID } from "node:crypto";
import type { ClusterNode } from "../test/helpers/cluster.ts";
import { type BenchCluster, sleep, sql, until } from "./cluster-harness.ts";
import { percentile, smokeRun } from "./lib.ts";

type Row = Record<string, string | number>;
const MB = 2 ** 20;

/** A record as PostgresStore.save() wrote it for a real session (real pi, one settled run). */
async function template(h: BenchCluster, db: string): Promise<Record<string, any>> {
	const { node } = await h.node("seed", db);
	const id = (await h.ok(node, "POST", "/v1/sessions", {}, 201)).id as string;
	await h.ok(node, "POST", `/v1/sessions/${id}/prompt?wait=true`, { message: "echo: seed" });
	await h.stop(node);
	const [row] = await sql(db, "SELECT record FROM sessions WHERE id = $1", [id]);
	// The registry starts empty: the seed was only there to write a record.
	await sql(db, "DELETE FROM conversations; DELETE FROM session_access; DELETE FROM sessions");
	return JSON.parse(row.record);
}

async function seed(db: string, model: Record<string, any>, count: number): Promise<void> {
	const batch = 1000;
	for (let from = 0; from < count; from += batch) {
		const ids: string[] = [];
		const records: string[] = [];
		for (let i = from; i < Math.min(count, from + batch); i++) {
			const id = randomUUID();
			const piSessionId = randomUUID();
			const piState = {
				...model.piState,
				sessionId: piSessionId,
				sessionFile: String(model.piState.sessionFile).replace(model.piState.sessionId, piSessionId),
			};
			const createdAt = new Date(Date.parse(model.createdAt) - (count - i) * 1000).toISOString();
			ids.push(id);
			records.push(JSON.stringify({ ...model, id, name: `bench ${i}`, piState, createdAt }));
		}
		await sql(
			db,
			"INSERT INTO sessions (id, record, owner, updated_at) SELECT id, record, NULL, now() FROM unnest($1::text[], $2::text[]) AS t(id, record)",
			[ids, records],
		);
	}
}

/** Starts `starts` nodes one after the other (each stopped before the next); the last one is measured. */
async function measure(h: BenchCluster, db: string, registered: number, starts: number, lists: number) {
	const startTimes: number[] = [];
	let node: ClusterNode | undefined;
	for (let i = 0; i < starts; i++) {
		if (node) await h.stop(node);
		const started = await h.node("measured", db);
		node = started.node;
		startTimes.push(started.startMs);
	}
	const measured = node as ClusterNode;
	await sleep(smokeRun ? 200 : 1000); // start-up garbage and lazy work first (a smoke pass keeps no figure)
	const atStart = await h.memory(measured);
	const times: number[] = [];
	let bytes = 0;
	// The unpaged call: the first page (default limit 100), as a client that names no limit gets it.
	for (let i = -2; i < lists; i++) {
		const res = await h.call(measured, "GET", "/v1/sessions");
		if (res.status !== 200 || res.json.sessions.length !== Math.min(registered, firstPage))
			throw new Error(`GET /v1/sessions: HTTP ${res.status}, ${res.json.sessions?.length} sessions`);
		if (i >= 0) times.push(res.ms);
		bytes = res.bytes;
	}
	const walk = await everyPage(h, measured, registered);
	const afterLists = await h.memory(measured);
	await h.stop(measured);
	times.sort((a, b) => a - b);
	startTimes.sort((a, b) => a - b);
	return {
		startMs: percentile(startTimes, 50),
		atStart,
		afterLists,
		listP50: percentile(times, 50),
		listP99: percentile(times, 99),
		bytes,
		walk,
	};
}

const firstPage = 100;

/** Every page at the largest limit (500), cursor after cursor: what listing all of them costs now. */
async function everyPage(h: BenchCluster, node: ClusterNode, registered: number) {
	let cursor: string | null = null;
	let ms = 0;
	let bytes = 0;
	let seen = 0;
	do {
		const res = await h.call(node, "GET", `/v1/sessions?limit=500${cursor ? `&cursor=${cursor}` : ""}`);
		if (res.status !== 200) throw new Error(`GET /v1/sessions?limit=500: HTTP ${res.status}`);
		ms += res.ms;
		bytes += res.bytes;
		seen += res.json.sessions.length;
		cursor = res.json.nextCursor;
	} while (cursor);
	if (seen !== registered) throw new Error(`every page: ${seen} sessions of ${registered}`);
	return { ms, bytes };
}

export async function registry(h: BenchCluster, count: number, starts: number, lists: number): Promise<Row[][]> {
	const db = await h.database();
	const model = await template(h, db);
	// A second live node, so each list also asks a peer for its sessions (the cluster-wide fan-out).
	const { node: peer } = await h.node("peer", db);
	const empty = await measure(h, db, 0, starts, lists);
	await seed(db, model, count);
	await until(async () => (await sql(db, "SELECT count(*)::int AS n FROM sessions"))[0].n === count);
	const full = await measure(h, db, count, starts, lists);
	await h.stop(peer);
	const row = (registered: number, m: typeof empty): Row => ({
		"registered (stopped)": registered,
		"node start p50 ms": m.startMs,
		"RSS MB": m.atStart.rssBytes / MB,
		"JS heap MB": m.atStart.heapBytes / MB,
		"GET /v1/sessions (first page) p50 ms": m.listP50,
		"p99 ms": m.listP99,
		"body KB": m.bytes / 1024,
		"every page (limit 500) ms": m.walk.ms,
		"every page KB": m.walk.bytes / 1024,
		"RSS MB after lists": m.afterLists.rssBytes / MB,
		"JS heap MB after lists": m.afterLists.heapBytes / MB,
	});
	const per = (what: string, at: "atStart" | "afterLists"): Row => ({
		"per registered session": what,
		"RSS bytes": (full[at].rssBytes - empty[at].rssBytes) / count,
		"JS heap bytes": (full[at].heapBytes - empty[at].heapBytes) / count,
	});
	return [
		[row(0, empty), row(count, full)],
		[per("after start (nothing loaded)", "atStart"), per(`after ${lists + 2} lists`, "afterLists")],
	];
}
