import { createHash, createHmac } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { StreamTickets } from "../../src/http/auth/tickets.ts";
import { type ClusterNode, type NodeOptions, startNode } from "../helpers/cluster.ts";
import { gatewayEntry } from "../helpers/gateway-entry.ts";
import { query, startTestPostgres, type TestPostgres } from "../helpers/postgres.ts";

// Several gateway processes and real pi per test: a busy machine needs room.
vi.setConfig({ testTimeout: 90_000, hookTimeout: 60_000 });

// What an attacker gets from cluster mode (issue 20): a request with no credential, a database
// reader, a process on a node's host. Two nodes on one embedded PostgreSQL, real pi (demo model).
const token = "cluster-trust-token";
let server: TestPostgres;
let root: string | undefined;
const nodes: ClusterNode[] = [];

beforeAll(async () => {
	server = await startTestPostgres();
});
afterEach(async () => {
	await Promise.all(nodes.splice(0).map((n) => n.stop()));
	if (root) rmSync(root, { recursive: true, force: true });
	root = undefined;
});
afterAll(async () => {
	await server?.stop();
});

async function cluster(names: string[], options: Partial<NodeOptions> = {}) {
	root ??= mkdtempSync(join(tmpdir(), "pi-gateway-ctrust-"));
	const databaseUrl = await server.freshDatabase();
	const started: ClusterNode[] = [];
	const at = root;
	for (const name of names) {
		const node = await startNode({ name, databaseUrl, root: at, token, leaseTtlMs: 5000, ...options });
		nodes.push(node);
		started.push(node);
	}
	return { databaseUrl, nodes: started };
}

/** Every file under `dir`, with its size (what a takeover would add to a node's disk). */
function files(dir: string): string[] {
	return readdirSync(dir, { recursive: true, withFileTypes: true })
		.filter((e) => e.isFile() && !/gateway\.db/.test(e.name))
		.map((e) => join(e.parentPath, e.name))
		.sort();
}

describe("cluster mode: nothing before authentication", () => {
	it("a request with no, a bad or an unscoped credential for an unowned session changes nothing on the node it reached", async () => {
		root = mkdtempSync(join(tmpdir(), "pi-gateway-ctrust-"));
		const keysFile = join(root, "keys.json");
		const reader = `Bearer ${createKey(keysFile, "reader", ["approvals:read"]).secret}`;
		const {
			databaseUrl,
			nodes: [a, b],
		} = (await cluster(["a", "b"], { extra: [`--keys-file=${keysFile}`] })) as {
			databaseUrl: string;
			nodes: [ClusterNode, ClusterNode];
		};
		const id = (await a.api("/v1/sessions", { method: "POST", json: {} })).body.id as string;
		const run = await a.api(`/v1/sessions/${id}/prompt?wait=true`, { method: "POST", json: { message: "echo: mine" } });
		expect(run.status).toBe(200);
		// A stops: the session is given back (no owner), its conversation in the database.
		await a.stop();
		nodes.splice(nodes.indexOf(a), 1);
		const owner = async () => (await query(databaseUrl, "SELECT owner FROM sessions WHERE id = $1", [id]))[0]?.owner;
		expect(await owner()).toBeNull();
		const before = files(b.dataDir);

		const attempts: [string, string, Record<string, string>][] = [
			["GET", `/v1/sessions/${id}`, {}],
			["GET", `/v1/sessions/${id}/messages`, { authorization: "Bearer not-the-token-at-all" }],
			["POST", `/v1/sessions/${id}/prompt?wait=true`, {}],
			["GET", `/v1/sessions/${id}/events?ticket=0.${"A".repeat(43)}`, {}],
			["GET", "/v1/sessions/%ff", {}],
			["GET", "/v1/sessions/%E0%A4%A/messages", {}],
		];
		for (const [method, path, headers] of attempts) {
			const res = await fetch(b.url + path, {
				method,
				headers: { ...headers, "content-type": "application/json" },
				...(method === "POST" && { body: JSON.stringify({ message: "echo: theirs" }) }),
			});
			// A malformed percent-escape may be refused as such (400) before anyone is asked for a credential.
			const refused = path.includes("%") ? [400, 401] : [401];
			expect({ method, path, refused: refused.includes(res.status) }).toEqual({ method, path, refused: true });
			await res.body?.cancel();
		}
		// Authenticated without the scope: 403, and still nothing claimed.
		const unscoped = await fetch(`${b.url}/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			headers: { authorization: reader, "content-type": "application/json" },
			body: JSON.stringify({ message: "echo: theirs" }),
		});
		expect(unscoped.status).toBe(403);
		expect(await owner()).toBeNull();
		expect(files(b.dataDir)).toEqual(before);
		// An undecodable id from an authenticated caller is a client error, never a 500.
		for (const path of ["/v1/sessions/%ff", "/v1/sessions/%E0%A4%A/messages"])
			expect((await b.fetch(path)).status).toBeLessThan(500);
		// The owner is who it was: the session's own requests still work (B takes it over now).
		const mine = await b.api(`/v1/sessions/${id}/messages`);
		expect(mine.status).toBe(200);
		expect(await owner()).toBe("b");
	});
});

describe("cluster mode: the database holds no key", () => {
	it("a database reader can forge neither a stream ticket nor a forwarded request", async () => {
		const {
			databaseUrl,
			nodes: [a, b],
		} = (await cluster(["a", "b"])) as { databaseUrl: string; nodes: [ClusterNode, ClusterNode] };
		const id = (await a.api("/v1/sessions", { method: "POST", json: {} })).body.id as string;
		// Whatever the database holds, tried as the key the way the nodes derived theirs.
		const stored = await query(databaseUrl, "SELECT key, value FROM meta");
		for (const secret of ["", ...stored.map((r) => String(r.value))]) {
			const key = createHash("sha256").update(`tickets:${secret}`).digest();
			const { ticket } = new StreamTickets({ ttlMs: 60_000, key }).issue("*", Date.now(), "admin");
			const stream = await fetch(`${b.url}/v1/events?ticket=${ticket}`);
			await stream.body?.cancel();
			expect(stream.status).toBe(401);
			// A forward B believes is never forwarded again (421): one B does not believe is sent on to A.
			const mac = createHmac("sha256", secret).update("forward:a").digest("base64url");
			const forged = await b.fetch(`/v1/sessions/${id}`, { headers: { "x-pi-gateway-forwarded": `a ${mac}` } });
			await forged.body?.cancel();
			expect(forged.status).toBe(200);
		}
		expect(stored.map((r) => r.key)).not.toContain("cluster_secret");
		// A secret an earlier version left in the database is deleted by the next node to start.
		await query(databaseUrl, "INSERT INTO meta (key, value) VALUES ('cluster_secret', 'left-by-an-earlier-version')");
		nodes.push(await startNode({ name: "c", databaseUrl, root: root as string, token, leaseTtlMs: 5000 }));
		expect(await query(databaseUrl, "SELECT key FROM meta WHERE key = 'cluster_secret'")).toEqual([]);
	});
});

describe("cluster mode: a ticket's reconnect through another node", () => {
	it("past its expiry a bound ticket reconnects through any node; an unbound one is refused and claims nothing", async () => {
		const {
			databaseUrl,
			nodes: [a, b, c],
		} = (await cluster(["a", "b", "c"], { extra: ["--stream-ticket-ttl-ms=1000"] })) as {
			databaseUrl: string;
			nodes: [ClusterNode, ClusterNode, ClusterNode];
		};
		const id = (await a.api("/v1/sessions", { method: "POST", json: {} })).body.id as string;
		const ticketed = async () => (await a.api(`/v1/sessions/${id}/events/ticket`, { method: "POST" })).body.eventsUrl;
		const [bound, unbound] = [await ticketed(), await ticketed()];
		// Opened through B: A serves it (and binds the ticket), B relays it.
		const first = await fetch(b.url + bound);
		expect(first.status).toBe(200);
		await new Promise((r) => setTimeout(r, 1500));
		// Expired now; EventSource's retry lands on C, which did not see the stream.
		const again = await fetch(c.url + bound);
		expect(again.status).toBe(200);
		await again.body?.cancel();
		await first.body?.cancel();
		const never = await fetch(c.url + unbound);
		await never.body?.cancel();
		expect(never.status).toBe(401);
		// A session no live node runs is not claimed for an expired ticket.
		await a.stop();
		nodes.splice(nodes.indexOf(a), 1);
		const late = await fetch(c.url + bound);
		await late.body?.cancel();
		expect(late.status).toBe(401);
		expect((await query(databaseUrl, "SELECT owner FROM sessions WHERE id = $1", [id]))[0]?.owner).toBeNull();
	});
});

describe("cluster mode: a node on another machine", () => {
	it("accepts its own --advertise-url's host (how its peers reach it), and still no other", async () => {
		const { nodes: started } = await cluster(["a"], { extra: ["--advertise-url=http://pgw-node-a.test:8787"] });
		const port = new URL((started[0] as ClusterNode).url).port;
		const asked = (host: string) =>
			new Promise<number>((done, fail) => {
				const req = httpRequest({ host: "127.0.0.1", port, path: "/readyz", headers: { host } }, (res) => {
					res.resume();
					done(res.statusCode as number);
				});
				req.on("error", fail).end();
			});
		expect(await asked("pgw-node-a.test:8787")).toBe(200);
		expect(await asked("pgw-node-a.test")).toBe(200);
		expect(await asked("attacker.test:8787")).toBe(421);
	});
});

describe("cluster mode: no password on a command line", () => {
	it("no node's /proc/<pid>/cmdline holds the database password (URL from the environment or a file)", async () => {
		const databaseUrl = await server.freshDatabase();
		const password = decodeURIComponent(new URL(databaseUrl).password);
		expect(password.length).toBeGreaterThan(8);
		root = mkdtempSync(join(tmpdir(), "pi-gateway-ctrust-"));
		for (const [name, databaseUrlVia] of [
			["a", "env"],
			["b", "file"],
		] as const) {
			const node = await startNode({ name, databaseUrl, root, token, leaseTtlMs: 5000, databaseUrlVia });
			nodes.push(node);
		}
		for (const node of nodes) {
			const argv = readFileSync(`/proc/${node.pid}/cmdline`, "utf8");
			expect(argv).toContain(gatewayEntry);
			expect(argv).not.toContain(password);
			expect((await node.api("/readyz")).status).toBe(200);
		}
		// Given on argv anyway: it works, and the node says loudly where else to put it.
		const c = await startNode({ name: "c", databaseUrl, root, token, leaseTtlMs: 5000, databaseUrlVia: "argv" });
		nodes.push(c);
		expect(c.stderr()).toMatch(/WARNING: --database-url on the command line .*PI_GATEWAY_DATABASE_URL/);
		expect(c.logs.some((l) => l.level === 40 && /--database-url on the command line/.test(String(l.msg)))).toBe(true);
		expect(nodes.slice(0, 2).some((n) => /--database-url on the command line/.test(n.stderr()))).toBe(false);
	});
});
