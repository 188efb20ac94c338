import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { type ClusterNode, startNode } from "../helpers/cluster.ts";
import { until } from "../helpers/gateway.ts";
import { query, startTestPostgres, type TestPostgres } from "../helpers/postgres.ts";

// Scheduled runs in cluster mode (issue 47 item 1): two gateway processes on one embedded
// PostgreSQL, real pi (demo model), a schedule of 1 s (--schedule-min-interval-seconds lowered for
// tests), whenBusy queue (a second prompt for one tick would not be refused as busy but queued, and
// seen). Both nodes look for due ticks every 200 ms; each tick must reach pi once, never twice and
// never by both, and the ticks go on when the session's node is killed.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

const token = "cluster-schedules-token";
const leaseTtlMs = 5000;
let server: TestPostgres;
let root: string;
const nodes: ClusterNode[] = [];

beforeAll(async () => {
	server = await startTestPostgres();
});
afterAll(async () => {
	await Promise.all(nodes.splice(0).map((n) => n.stop()));
	if (root) rmSync(root, { recursive: true, force: true });
	await server?.stop();
});

type Run = { runId: string | null; at: string; status: string };

/** The prompts pi took from the schedule: its user messages (a refused busy prompt leaves none). */
async function prompted(node: ClusterNode, id: string): Promise<number> {
	const { status, body } = await node.api(`/v1/sessions/${id}/messages`);
	expect(status).toBe(200);
	return body.messages.filter((m: any) => m.role === "user" && JSON.stringify(m.content).includes("echo: tick")).length;
}

/** Pauses the schedule and waits until no tick is in flight and the session is idle; its ticks then. */
async function settle(node: ClusterNode, id: string, sid: string): Promise<Run[]> {
	const path = `/v1/sessions/${id}/schedules/${sid}`;
	expect((await node.api(path, { method: "PATCH", json: { enabled: false } })).status).toBe(200);
	return await until(async () => {
		const { body } = await node.api(path);
		if (body.runs.some((r: Run) => r.status === "pending")) return false;
		const session = (await node.api(`/v1/sessions/${id}`)).body;
		return session.status === "idle" && session.queuedCommands === 0 && (body.runs as Run[]);
	}, 60_000);
}

const fired = (runs: Run[]) => runs.filter((r) => r.status === "started" || r.status === "queued");

it("each tick runs once whichever nodes are up, and the ticks go on when the session's node is killed", async () => {
	root = mkdtempSync(join(tmpdir(), "pi-gateway-cluster-schedules-"));
	const databaseUrl = await server.freshDatabase();
	const extra = ["--schedule-min-interval-seconds=1", "--schedule-check-ms=200"];
	for (const name of ["a", "b"]) nodes.push(await startNode({ name, databaseUrl, root, token, leaseTtlMs, extra }));
	const [a, b] = nodes as [ClusterNode, ClusterNode];
	const created = await a.api("/v1/sessions", { method: "POST", json: {} });
	expect(created.body.node).toBe("a");
	const id = created.body.id as string;
	// Made through b (forwarded to a): one schedule for the cluster.
	const made = await b.api(`/v1/sessions/${id}/schedules`, {
		method: "POST",
		json: { message: "echo: tick", intervalSeconds: 1, whenBusy: "queue" },
	});
	expect(made.status).toBe(201);
	const sid = made.body.id as string;
	const path = `/v1/sessions/${id}/schedules/${sid}`;

	// Both nodes up: both look every 200 ms, one wins each tick, and pi gets one prompt per fired tick.
	await until(async () => fired((await a.api(path)).body.runs).length >= 4, 60_000);
	let runs = await settle(b, id, sid);
	expect(await prompted(b, id)).toBe(fired(runs).length);
	expect(new Set(fired(runs).map((r) => r.runId)).size).toBe(fired(runs).length);
	const claimedBy = await query(databaseUrl, "SELECT node, count(*)::int AS n FROM schedule_runs GROUP BY node");
	expect(claimedBy.reduce((sum, row) => sum + row.n, 0)).toBe(runs.length);

	// a, which runs the session, dies right after the schedule is on again (every 3 s, so a claims
	// nothing before): b alone claims the ticks; the first ones wait for the session to move to b.
	const prompts = await prompted(b, id);
	const lastTick = Math.max(...runs.map((r) => Date.parse(r.at)));
	const again = await b.api(path, { method: "PATCH", json: { enabled: true, intervalSeconds: 3 } });
	expect(again.status).toBe(200);
	a.signal("SIGKILL");
	await a.exited;
	const since = (list: Run[]) => fired(list).filter((r) => Date.parse(r.at) > lastTick);
	await until(async () => since((await b.api(path)).body.runs).length >= 3, 90_000);
	runs = await settle(b, id, sid);
	expect((await b.api(`/v1/sessions/${id}`)).body.node).toBe("b");
	// The conversation came over with the session (a's runs had settled before the kill), and each
	// tick since reached pi once.
	expect((await prompted(b, id)) - prompts).toBe(since(runs).length);
	const after = await query(databaseUrl, "SELECT node FROM schedule_runs WHERE schedule_id = $1 AND tick_at > $2", [
		sid,
		lastTick,
	]);
	expect(new Set(after.map((row) => row.node))).toEqual(new Set(["b"]));
});
