import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type ClusterNode, startNode } from "../helpers/cluster.ts";
import { alive, until } from "../helpers/gateway.ts";
import { query, startTestPostgres, type TestPostgres } from "../helpers/postgres.ts";

// Gateway processes, real pi and a lease: a busy machine needs room.
vi.setConfig({ testTimeout: 90_000, hookTimeout: 60_000 });

// Client tools in cluster mode: a call made by pi on node A is listed, long-polled, read and
// answered through node B (the session's routes are forwarded to its owner; the cross-session
// list gathers every node's calls and its long-poll wakes on another node's call).
const token = "client-tools-cluster-token";
let server: TestPostgres;
let root: string;
const nodes: ClusterNode[] = [];
const leaseTtlMs = 5000;
const tool = {
	name: "lookup_price",
	description: "The price of a product in EUR, by its SKU",
	parameters: { type: "object", properties: { sku: { type: "string" } }, required: ["sku"] },
};

beforeAll(async () => {
	server = await startTestPostgres();
	root = mkdtempSync(join(tmpdir(), "pi-gateway-ctools-cluster-"));
	const databaseUrl = await server.freshDatabase();
	for (const name of ["a", "b"]) nodes.push(await startNode({ name, databaseUrl, root, token, leaseTtlMs }));
});
afterAll(async () => {
	await Promise.all(nodes.map((n) => n.stop()));
	await server?.stop();
	if (root) rmSync(root, { recursive: true, force: true });
});

describe("cluster mode: client tools", () => {
	it("a long-poll of /v1/tool-calls on B wakes for a call on A; B's answer reaches A's pi", async () => {
		const [a, b] = nodes as [ClusterNode, ClusterNode];
		const created = await a.api("/v1/sessions", { method: "POST", json: { clientTools: [tool] } });
		expect(created.status).toBe(201);
		const id = created.body.id as string;
		let woke = false;
		const poll = b.api("/v1/tool-calls?status=pending&wait=60").then((r) => {
			woke = true;
			return r;
		});
		// Held: nothing is pending anywhere yet.
		await new Promise((r) => setTimeout(r, 300));
		expect(woke).toBe(false);
		const run = b.api(`/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			json: { message: 'tool: lookup_price {"sku":"A-1"}' },
		});
		const { body: inbox } = await poll;
		expect(inbox.toolCalls).toEqual([
			expect.objectContaining({ sessionId: id, name: "lookup_price", arguments: { sku: "A-1" }, status: "pending" }),
		]);
		const call = inbox.toolCalls[0];
		const path = `/v1/sessions/${id}/tool-calls/${call.id}`;
		expect((await b.api(path)).body).toMatchObject({ id: call.id, status: "pending" });
		const answered = await b.api(path, { method: "POST", json: { output: "19.90" } });
		expect(answered.status).toBe(200);
		expect(answered.body).toMatchObject({ status: "answered", resolvedBy: "admin" });
		expect((await b.api(path, { method: "POST", json: { output: "20" } })).status).toBe(409);
		const done = await run;
		expect(done.status).toBe(200);
		expect(done.body.text).toBe("19.90");
		expect((await a.api(`/v1/sessions/${id}/tool-calls?status=answered`)).body.toolCalls).toHaveLength(1);
	});

	it("SIGKILL of the owner while a call is pending: on the node that takes the session over the call answers 410", async () => {
		const [a, b] = nodes as [ClusterNode, ClusterNode];
		const id = (await a.api("/v1/sessions", { method: "POST", json: { clientTools: [tool] } })).body.id as string;
		void b.api(`/v1/sessions/${id}/prompt`, { method: "POST", json: { message: 'tool: lookup_price {"sku":"Z"}' } });
		const call = await until(
			async () => (await b.api(`/v1/sessions/${id}/tool-calls?status=pending&wait=5`)).body.toolCalls[0],
		);
		// Written at once when the call opened: the next owner knows which calls died.
		await until(async () => {
			const stored = await query(a.databaseUrl, "SELECT record FROM sessions WHERE id = $1", [id]);
			return JSON.parse(stored[0]?.record ?? "{}").pendingToolCalls?.includes(call.id);
		});
		const pid = (await a.api(`/v1/sessions/${id}`)).body.pid as number;
		a.signal("SIGKILL");
		await a.exited;
		await until(() => !alive(pid));
		const gone = await until(async () => {
			const answer = await b.api(`/v1/sessions/${id}/tool-calls/${call.id}`, {
				method: "POST",
				json: { output: "late" },
			});
			return answer.status !== 503 && answer;
		}, leaseTtlMs + 15_000);
		expect(gone.status).toBe(410);
		expect(gone.body.code).toBe("tool_call_gone");
	});
});
