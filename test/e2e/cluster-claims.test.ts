import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { type ClusterNode, startNode } from "../helpers/cluster.ts";
import { query, startTestPostgres, type TestPostgres } from "../helpers/postgres.ts";

vi.setConfig({ testTimeout: 90_000, hookTimeout: 60_000 });

// Issue 30, item 6: in cluster mode a node claims a session no live node owns only for a caller
// allowed on it. A caller with the scope but no right on the session gets the 404 of a session
// that does not exist, and nothing is claimed: the row keeps no owner, the node's disk gains nothing.
const token = "cluster-claims-token";
let server: TestPostgres;
let root: string;
const nodes: ClusterNode[] = [];

beforeAll(async () => {
	server = await startTestPostgres();
	root = mkdtempSync(join(tmpdir(), "pi-gateway-claims-"));
});
afterAll(async () => {
	await Promise.all(nodes.splice(0).map((n) => n.stop()));
	await server?.stop();
	rmSync(root, { recursive: true, force: true });
});

/**
 * Every file under `dir` but the node's own database and pi's caches in the agent dirs and the
 * compile caches (what a claim would add is the conversation; a warm-pool pi starting meanwhile
 * writes models-store.json into its agent dir and its compile cache whatever a caller does).
 */
function files(dir: string): string[] {
	return readdirSync(dir, { recursive: true, withFileTypes: true })
		.filter((e) => e.isFile() && !/gateway\.db/.test(e.name) && e.name !== "models-store.json")
		.filter((e) => !e.parentPath.startsWith(join(dir, "compile-cache")))
		.map((e) => join(e.parentPath, e.name))
		.sort();
}

const as = (node: ClusterNode, who: string, path: string, init: RequestInit & { json?: unknown } = {}) =>
	node.api(path, {
		...init,
		headers: { authorization: who },
		...(init.json !== undefined && { json: init.json }),
	});

describe("cluster mode: claiming needs a right", () => {
	it("a caller with the scope but no right on an unowned session gets 404 and claims nothing; one with a right claims it", async () => {
		const keysFile = join(root, "keys.json");
		const key = (name: string) => `Bearer ${createKey(keysFile, name, ["sessions:read", "sessions:write"]).secret}`;
		const [alice, bob, carol] = [key("alice"), key("bob"), key("carol")];
		const databaseUrl = await server.freshDatabase();
		const start = async (name: string) => {
			const node = await startNode({
				name,
				databaseUrl,
				root,
				token,
				leaseTtlMs: 5000,
				// Claims with the operator's pool: a pooled pi adopted on one node is a claim too.
				pool: "default",
				extra: [`--keys-file=${keysFile}`],
			});
			nodes.push(node);
			return node;
		};
		const a = await start("a");
		const id = (await as(a, alice, "/v1/sessions", { method: "POST", json: {} })).body.id as string;
		const run = await as(a, alice, `/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			json: { message: "echo: alice's" },
		});
		expect(run.status).toBe(200);
		expect(
			(
				await as(a, alice, `/v1/sessions/${id}/access`, {
					method: "PUT",
					json: { grants: [{ principal: "carol", can: ["read"] }] },
				})
			).status,
		).toBe(200);
		// A stops: the session is given back (no owner), its conversation in the database.
		await a.stop();
		nodes.splice(nodes.indexOf(a), 1);
		const owner = async () => (await query(databaseUrl, "SELECT owner FROM sessions WHERE id = $1", [id]))[0]?.owner;
		expect(await owner()).toBeNull();

		const b = await start("b");
		const before = files(b.dataDir);
		const missing = "ses_AAAAAAAAAAAA";
		const unknown = await as(b, bob, `/v1/sessions/${missing}`);
		expect(unknown.status).toBe(404);
		for (const [method, path] of [
			["GET", `/v1/sessions/${id}`],
			["GET", `/v1/sessions/${id}/messages`],
			["POST", `/v1/sessions/${id}/prompt?wait=true`],
			["GET", `/v1/sessions/${id}/events?after=0`],
		] as const) {
			const res = await as(b, bob, path, {
				method,
				...(method === "POST" && { json: { message: "echo: bob's" } }),
			});
			// The very answer of a session that does not exist (its id aside).
			expect({ path, status: res.status, body: res.body }).toEqual({
				path,
				status: 404,
				body: { ...unknown.body, detail: `No session ${id}`, instance: res.body.instance },
			});
			expect(await owner()).toBeNull();
		}
		expect(files(b.dataDir)).toEqual(before);

		// A principal the session is shared with may claim it; the owner too.
		const read = await as(b, carol, `/v1/sessions/${id}/messages`);
		expect(read.status).toBe(200);
		expect(JSON.stringify(read.body)).toContain("alice's");
		expect(await owner()).toBe("b");
		expect((await as(b, alice, `/v1/sessions/${id}`)).status).toBe(200);
		// Held now, it is still not bob's.
		expect((await as(b, bob, `/v1/sessions/${id}`)).status).toBe(404);
	});
});

describe("cluster mode: a takeover", () => {
	// Issue 45 item 1: a session given back (hibernated) and taken over by another node wakes there on
	// that node's warm pool pi, where one is what a cold start would be (the shared --workspace-root:
	// an admin's session works in the root, which the operator's pool was started for).
	it("a session taken over wakes on the new node's warm pool pi, its conversation intact", async () => {
		const databaseUrl = await server.freshDatabase();
		const start = async (name: string) => {
			const node = await startNode({ name, databaseUrl, root, token, leaseTtlMs: 5000, pool: "default" });
			nodes.push(node);
			return node;
		};
		const admin = `Bearer ${token}`;
		const a = await start("a2");
		const id = (await as(a, admin, "/v1/sessions", { method: "POST", json: {} })).body.id as string;
		expect(
			(await as(a, admin, `/v1/sessions/${id}/prompt?wait=true`, { method: "POST", json: { message: "echo: one" } }))
				.status,
		).toBe(200);
		await a.stop();
		nodes.splice(nodes.indexOf(a), 1);

		const b = await start("b2");
		const run = await as(b, admin, `/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			json: { message: "echo: two" },
		});
		expect(run.status, JSON.stringify(run.body)).toBe(200);
		expect(run.body.text).toBe("two");
		const resumed = b.logs.find((line) => line.msg === "session resumed" && line.sessionId === id);
		expect(resumed, JSON.stringify(b.logs.filter((l) => l.sessionId === id))).toMatchObject({ pooled: true });
		const messages = (await as(b, admin, `/v1/sessions/${id}/messages`)).body.messages as { role: string }[];
		expect(messages.filter((m) => m.role === "user")).toHaveLength(2);
	});
});
