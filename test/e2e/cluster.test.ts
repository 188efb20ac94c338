import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type ClusterNode, startNode } from "../helpers/cluster.ts";
import { alive, until } from "../helpers/gateway.ts";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.ts";
import { collect, readFrames } from "../helpers/sse.ts";

// Cluster mode with real pi (demo model): three gateway processes on one embedded PostgreSQL,
// each with its own data dir (no shared filesystem), reached directly as a load balancer would.
const token = "cluster-test-token";
const leaseTtlMs = 3000;
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

async function cluster(names: string[], extra: string[] = [], ttl = leaseTtlMs) {
	root = mkdtempSync(join(tmpdir(), "pi-gateway-cluster-"));
	const databaseUrl = await server.freshDatabase();
	const started: ClusterNode[] = [];
	for (const name of names) {
		const node = await startNode({ name, databaseUrl, root, token, leaseTtlMs: ttl, extra });
		nodes.push(node);
		started.push(node);
	}
	return { databaseUrl, nodes: started };
}

async function rows(url: string, sql: string, params: unknown[] = []) {
	const client = new pg.Client({ connectionString: url });
	await client.connect();
	try {
		return (await client.query(sql, params)).rows;
	} finally {
		await client.end();
	}
}

async function create(node: ClusterNode, body: Record<string, unknown> = {}): Promise<string> {
	const { status, body: created } = await node.api("/v1/sessions", { method: "POST", json: body });
	expect(status).toBe(201);
	return created.id;
}

const prompt = (node: ClusterNode, id: string, message: string) =>
	node.api(`/v1/sessions/${id}/prompt?wait=true`, { method: "POST", json: { message } });

describe("cluster mode: any node serves any request", () => {
	it("creates on A, prompts through B, streams through C with Last-Event-ID, lists everywhere", async () => {
		const {
			nodes: [a, b, c],
		} = await cluster(["a", "b", "c"]);
		const id = await create(a as ClusterNode, { name: "shared" });
		const run = await prompt(b as ClusterNode, id, "echo: through b");
		expect(run.status).toBe(200);
		expect(run.body.text).toBe("through b");

		// The owner's event log, read through C from the start, and again from the middle.
		const view = (await (c as ClusterNode).api(`/v1/sessions/${id}`)).body;
		const last = view.lastEventId as number;
		const all = await collect(
			await (c as ClusterNode).fetch(`/v1/sessions/${id}/events`, { headers: { "last-event-id": "0" } }),
			(f) => f.id === String(last),
		);
		const ids = all.filter((f) => f.id).map((f) => Number(f.id));
		expect(ids).toEqual(Array.from({ length: last }, (_, i) => i + 1));
		const middle = Math.floor(last / 2);
		const rest = await collect(
			await (b as ClusterNode).fetch(`/v1/sessions/${id}/events`, { headers: { "last-event-id": String(middle) } }),
			(f) => f.id === String(last),
		);
		expect(rest.filter((f) => f.id).map((f) => f.data)).toEqual(
			all.filter((f) => Number(f.id) > middle).map((f) => f.data),
		);

		for (const node of [a, b, c] as ClusterNode[]) {
			const listed = (await node.api("/v1/sessions")).body.sessions;
			expect(listed.map((s: { id: string }) => s.id)).toEqual([id]);
			expect(listed[0]).toMatchObject({ status: "idle", name: "shared" });
			const info = (await node.api("/v1/info")).body;
			expect(info.cluster.node).toBe(node.name);
			expect(info.cluster.nodes.map((n: { id: string }) => n.id)).toEqual(["a", "b", "c"]);
		}
		const metrics = await (await (c as ClusterNode).fetch("/metrics")).text();
		expect(metrics).toMatch(/pi_gateway_cluster_nodes 3/);
		await until(async () =>
			/pi_gateway_cluster_sessions\{node="a"\} 1/.test(await (await (b as ClusterNode).fetch("/metrics")).text()),
		);
	});
});
