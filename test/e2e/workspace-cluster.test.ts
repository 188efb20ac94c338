import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type ClusterNode, startNode } from "../helpers/cluster.ts";
import { until } from "../helpers/gateway.ts";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.ts";
import { collect } from "../helpers/sse.ts";

vi.setConfig({ testTimeout: 90_000, hookTimeout: 90_000 });

// Two gateway processes on one embedded PostgreSQL: the workspace of a session is served by the
// node that runs it; the other forwards, an upload's raw body streamed through (past the JSON limit).
const token = "workspace-cluster-token";
let server: TestPostgres;
let root: string;
const nodes: ClusterNode[] = [];

beforeAll(async () => {
	server = await startTestPostgres();
	root = mkdtempSync(join(tmpdir(), "pi-gateway-ws-cluster-"));
	const databaseUrl = await server.freshDatabase();
	for (const name of ["a", "b"])
		nodes.push(
			await startNode({ name, databaseUrl, root, token, leaseTtlMs: 5000, extra: ["--max-body-bytes=65536"] }),
		);
});
afterAll(async () => {
	await Promise.all(nodes.map((n) => n.stop()));
	await server?.stop();
	if (root) rmSync(root, { recursive: true, force: true });
});

describe("cluster mode: the workspace is served by the session's node", () => {
	it("uploads, reads, searches, archives and diffs a session of A through B", async () => {
		const [a, b] = nodes as [ClusterNode, ClusterNode];
		const created = await a.api("/v1/sessions", { method: "POST", json: {} });
		expect(created.status).toBe(201);
		const { id, cwd } = created.body as { id: string; cwd: string };
		const big = new Uint8Array(256 * 1024).fill(97);
		const put = await b.fetch(`/v1/sessions/${id}/files/content?path=in/big.txt`, { method: "PUT", body: big });
		expect(put.status).toBe(201);
		expect(readFileSync(join(cwd, "in", "big.txt")).length).toBe(big.length);
		const read = await b.fetch(`/v1/sessions/${id}/files/content?path=in/big.txt`, { headers: { range: "bytes=0-2" } });
		expect(read.status).toBe(206);
		expect(await read.text()).toBe("aaa");
		expect((await b.api(`/v1/sessions/${id}/files?path=in`)).body.entries).toHaveLength(1);
		const run = await b.api(`/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			json: { message: "bash: printf 'made on a\\n' > made.txt" },
		});
		expect(run.status).toBe(200);
		const changes = await b.api(`/v1/sessions/${id}/changes?runId=${run.body.runId}`);
		expect(changes.status).toBe(200);
		expect(changes.body.files).toMatchObject([{ path: "made.txt", status: "added" }]);
		// The snapshots are in the data dir of the node that ran the run.
		expect(readFileSync(join(a.dataDir, "snapshots", id, "runs.json"), "utf8")).toContain(run.body.runId);
		const search = await b.api(`/v1/sessions/${id}/files/search?q=made`);
		expect(search.body.matches).toContainEqual({ path: "made.txt", line: 1, text: "made on a" });
		const archive = await b.fetch(`/v1/sessions/${id}/archive`);
		expect(archive.status).toBe(200);
		expect((await archive.arrayBuffer()).byteLength).toBeGreaterThan(0);
		expect((await b.fetch(`/v1/sessions/${id}/files/content?path=made.txt`, { method: "DELETE" })).status).toBe(204);
	});

	it("a settled run's changes survive its node's death: another node answers them from PostgreSQL", async () => {
		const [a, b] = nodes as [ClusterNode, ClusterNode];
		const created = await a.api("/v1/sessions", { method: "POST", json: {} });
		const id = created.body.id as string;
		const run = await a.api(`/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			json: { message: "bash: printf 'before the crash\n' > kept.txt" },
		});
		expect(run.status).toBe(200);
		const runId = run.body.runId as string;
		// run_changes says the changes are kept (they are written before it).
		const events = await a.fetch(`/v1/sessions/${id}/events?after=0`);
		await collect(events, (f) => f.event === "run_changes");
		const before = (await a.api(`/v1/sessions/${id}/changes?runId=${runId}`)).body;
		a.signal("SIGKILL");
		await a.exited;
		// B takes the session over once A's lease runs out (the GET waits for the move).
		const after = await until(async () => {
			const res = await b.api(`/v1/sessions/${id}/changes?runId=${runId}`);
			return res.status === 200 ? res.body : undefined;
		}, 60_000);
		expect(after).toEqual(before);
		expect(after.files).toMatchObject([{ path: "kept.txt", status: "added" }]);
	});
});
