import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { type ClusterNode, startNode } from "../helpers/cluster.ts";
import { until } from "../helpers/gateway.ts";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.ts";

// A session taken over by a node must stay there for the request that took it: the node gives
// stopped sessions back every second, and one it has just claimed is stopped until that request
// starts pi. Found by the cluster benchmarks (bench/cluster-recovery.ts: a 404 after a failover).
const token = "cluster-takeover-token";
let server: TestPostgres;
let root: string;
const nodes: ClusterNode[] = [];

beforeAll(async () => {
	server = await startTestPostgres();
});
afterEach(async () => {
	await Promise.all(nodes.splice(0).map((n) => n.stop()));
	if (root) rmSync(root, { recursive: true, force: true });
});
afterAll(async () => {
	await server?.stop();
});

it("a session claimed by a request is not given back before that request is served", async () => {
	root = mkdtempSync(join(tmpdir(), "pi-gateway-takeover-"));
	const databaseUrl = await server.freshDatabase();
	const start = async (name: string) => {
		const node = await startNode({ name, databaseUrl, root, token, leaseTtlMs: 3000 });
		nodes.push(node);
		return node;
	};
	const [a, b] = [await start("a"), await start("b")];
	const id = (await a.api("/v1/sessions", { method: "POST", json: {} })).body.id as string;
	expect(
		(await a.api(`/v1/sessions/${id}/prompt?wait=true`, { method: "POST", json: { message: "echo: one" } })).status,
	).toBe(200);
	// A stops: the session is given back (owner NULL) with its conversation.
	await a.stop();
	nodes.splice(nodes.indexOf(a), 1);

	const db = new pg.Client({ connectionString: databaseUrl });
	await db.connect();
	try {
		const owner = async () => (await db.query("SELECT owner FROM sessions WHERE id = $1", [id])).rows[0]?.owner;
		expect(await owner()).toBeNull();
		// Holds B's takeover inside the claim (after the session is B's, before pi starts): the
		// conversation cannot be read until the lock goes.
		const lock = new pg.Client({ connectionString: databaseUrl });
		await lock.connect();
		await lock.query("BEGIN");
		await lock.query("LOCK TABLE conversations IN ACCESS EXCLUSIVE MODE");
		const answer = b.api(`/v1/sessions/${id}/prompt?wait=true`, { method: "POST", json: { message: "echo: two" } });
		await until(async () => (await owner()) === "b");
		await until(
			async () =>
				(
					await db.query(
						"SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()",
					)
				).rowCount === 1,
		);
		// Long enough for B's release tick (every second) to have run twice; it must leave the session alone.
		const releasedMeanwhile = await until(async () => (await owner()) === null, 2500).catch(() => false);
		await lock.query("COMMIT");
		await lock.end();
		const run = await answer;
		expect(releasedMeanwhile).toBe(false);
		expect(run.status).toBe(200);
		expect(run.body.text).toBe("two");
	} finally {
		await db.end();
	}
});
