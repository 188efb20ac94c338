import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { type ClusterNode, startNode } from "../helpers/cluster.ts";
import { alive, until } from "../helpers/gateway.ts";
import { query as rows, startTestPostgres, type TestPostgres } from "../helpers/postgres.ts";
import { collect, type Frame, readFrames } from "../helpers/sse.ts";
import { startProxy } from "../helpers/tcp-proxy.ts";

// Several gateway processes and real pi per test, and waits on leases: a busy machine needs room.
vi.setConfig({ testTimeout: 90_000, hookTimeout: 60_000 });

// Cluster mode with real pi (demo model): three gateway processes on one embedded PostgreSQL,
// each with its own data dir (no shared filesystem), reached directly as a load balancer would.
const token = "cluster-test-token";
// Short enough for the failover tests, long enough that a busy CI machine stalling a node for a
// second or two does not cost it its lease (trusted for 70 %, renewed every third).
const leaseTtlMs = 5000;
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

async function cluster(names: string[], extra: string[] = [], ttl = leaseTtlMs, pool?: "default") {
	root = mkdtempSync(join(tmpdir(), "pi-gateway-cluster-"));
	const databaseUrl = await server.freshDatabase();
	const started: ClusterNode[] = [];
	for (const name of names) {
		const node = await startNode({ name, databaseUrl, root, token, leaseTtlMs: ttl, extra, pool });
		nodes.push(node);
		started.push(node);
	}
	return { databaseUrl, nodes: started };
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
		// The operator's pool here: the session A hands out is a pooled pi, adopted into the cluster.
		const {
			nodes: [a, b, c],
		} = await cluster(["a", "b", "c"], [], leaseTtlMs, "default");
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
			// Each node reads the membership at every renewal: one that renewed before C joined lists C at its next.
			const info = await until(async () => {
				const body = (await node.api("/v1/info")).body;
				return body.cluster.nodes.length === 3 && body;
			}, leaseTtlMs * 2);
			expect(info.cluster.node).toBe(node.name);
			expect(info.cluster.nodes.map((n: { id: string }) => n.id)).toEqual(["a", "b", "c"]);
		}
		await until(async () =>
			/pi_gateway_cluster_nodes 3/.test(await (await (c as ClusterNode).fetch("/metrics")).text()),
		);
		await until(async () =>
			/pi_gateway_cluster_sessions\{node="a"\} 1/.test(await (await (b as ClusterNode).fetch("/metrics")).text()),
		);
	});
});

describe("cluster mode: the session list and who owns what", () => {
	it("says each session's node, pages and filters cluster-wide, and the per-node gauge follows a move at once", async () => {
		// A long lease: the membership is read only at each renewal (every 20 s), which is what the gauge lagged behind.
		const {
			databaseUrl,
			nodes: [a, b],
		} = await cluster(["a", "b"], ["--max-live-sessions=1"], 60_000);
		const [na, nb] = [a, b] as [ClusterNode, ClusterNode];
		const first = (await na.api("/v1/sessions", { method: "POST", json: {} })).body;
		expect(first.node).toBe("a");
		expect((await nb.api(`/v1/sessions/${first.id}`)).body.node).toBe("a");
		const second = await create(nb);
		const third = await create(na); // a holds one pi: the first session hibernates and is given back
		const owner = async (id: string) => (await rows(databaseUrl, "SELECT owner FROM sessions WHERE id = $1", [id]))[0];
		await until(async () => (await owner(first.id))?.owner === null, 20_000);

		const seen: { id: string; node: string | null; status: string }[] = [];
		let cursor: string | null = null;
		do {
			const page: { body: any } = await nb.api(`/v1/sessions?limit=1${cursor ? `&cursor=${cursor}` : ""}`);
			expect(page.body.sessions.length).toBe(1);
			seen.push(...page.body.sessions);
			cursor = page.body.nextCursor;
		} while (cursor);
		expect(seen.map((v) => [v.id, v.node, v.status])).toEqual([
			[first.id, null, "stopped"],
			[second, "b", "idle"],
			[third, "a", "idle"],
		]);
		const ids = async (query: string) =>
			(await nb.api(`/v1/sessions?${query}`)).body.sessions.map((v: { id: string }) => v.id);
		expect(await ids("node=a")).toEqual([third]);
		expect(await ids("node=b")).toEqual([second]);
		expect(await ids("status=stopped")).toEqual([first.id]);
		expect(await ids("limit=2")).toEqual([first.id, second]);

		// The move: a prompt through B takes the stopped session there. B's gauge says so at once.
		expect((await prompt(nb, first.id, "echo: moved")).status).toBe(200);
		expect((await na.api(`/v1/sessions/${first.id}`)).body.node).toBe("b");
		const gauge = (text: string, node: string) =>
			Number(text.match(new RegExp(`^pi_gateway_cluster_sessions\\{node="${node}"\\} (\\d+)$`, "m"))?.[1]);
		const text = await (await nb.fetch("/metrics")).text();
		expect(gauge(text, "b")).toBeGreaterThanOrEqual(1);
		expect(gauge(text, "a")).toBe(1);
	});
});

describe("cluster mode: approvals", () => {
	it("a long-poll of the inbox on C wakes for a dialog on A; C's answer reaches A's pi", async () => {
		const {
			nodes: [a, b, c],
		} = await cluster(["a", "b", "c"]);
		const id = await create(a as ClusterNode, { extensions: ["permission-gate"] });
		let woke = false;
		const poll = (c as ClusterNode).api("/v1/approvals?status=pending&wait=60").then((r) => {
			woke = true;
			return r;
		});
		// The poll is held (nothing pending anywhere) until the dialog opens.
		await new Promise((r) => setTimeout(r, 300));
		expect(woke).toBe(false);
		// Waits for the run, through B, while the dialog is answered through C.
		const run = prompt(b as ClusterNode, id, "bash: rm -rf ./scratch");
		const inbox = (await poll).body;
		expect(inbox.approvals).toHaveLength(1);
		const approval = inbox.approvals[0];
		expect(approval).toMatchObject({ sessionId: id, method: "select", options: ["Allow", "Block"], status: "pending" });
		const answered = await (c as ClusterNode).api(`/v1/sessions/${id}/approvals/${approval.id}`, {
			method: "POST",
			json: { value: "Block" },
		});
		expect(answered.status).toBe(200);
		expect(answered.body.status).toBe("answered");
		const done = await run;
		expect(done.status).toBe(200);
		expect(done.body.text).toContain("Blocked");
		expect((await (b as ClusterNode).api("/v1/approvals?status=pending")).body.approvals).toEqual([]);
		// The history is the cluster's too: A recorded the answer (behind, a moment later), B lists it.
		const history = await until(async () => {
			const listed = (await (b as ClusterNode).api(`/v1/approvals/history?sessionId=${id}`)).body.approvals;
			return listed.length > 0 && listed;
		});
		expect(history).toMatchObject([{ id: approval.id, status: "answered", answer: { value: "Block" } }]);
	});
});

describe("cluster mode: a node goes away", () => {
	it("rolling restart: SIGTERM on the owner under load; its sessions resume elsewhere, no conversation lost, only retryable 503s", async () => {
		const {
			nodes: [a, b, c],
		} = await cluster(["a", "b", "c"]);
		const ids = [await create(a as ClusterNode), await create(a as ClusterNode)];
		for (const id of ids) expect((await prompt(b as ClusterNode, id, `echo: ${id} 0`)).status).toBe(200);
		const last = (await (c as ClusterNode).api(`/v1/sessions/${ids[0]}`)).body.lastEventId as number;
		// A client following the first session's events through C while A stops.
		const follow = (c as ClusterNode).fetch(`/v1/sessions/${ids[0]}/events`, {
			headers: { "last-event-id": String(last) },
		});
		const statuses: number[] = [];
		const sent = new Map<string, string[]>(ids.map((id) => [id, [`${id} 0`]]));
		const load = async (id: string, through: ClusterNode) => {
			for (let i = 1; i <= 4; i++) {
				for (;;) {
					const res = await prompt(through, id, `echo: ${id} ${i}`);
					statuses.push(res.status);
					if (res.status === 200) break;
					// Only what a retry fixes, and it says when.
					expect(res.status).toBe(503);
					expect(Number(res.res.headers.get("retry-after"))).toBeGreaterThan(0);
					await new Promise((r) => setTimeout(r, 200));
				}
				sent.get(id)?.push(`${id} ${i}`);
			}
		};
		// A run in progress when A is told to stop: A lets it settle (drain) before its sessions move.
		const slowId = await create(a as ClusterNode);
		const slow = prompt(c as ClusterNode, slowId, "slow: 15");
		await until(async () => (await (b as ClusterNode).api(`/v1/sessions/${slowId}`)).body.status === "running");
		const loads = [load(ids[0] as string, b as ClusterNode), load(ids[1] as string, c as ClusterNode)];
		await until(() => statuses.length >= 2);
		await (a as ClusterNode).stop();
		await Promise.all(loads);
		const settled = await slow;
		expect(settled.status).toBe(200);
		expect(settled.body.text).toMatch(/15/);
		for (const id of ids) {
			const messages = (await (b as ClusterNode).api(`/v1/sessions/${id}/messages`)).body.messages as {
				role: string;
				content: unknown;
			}[];
			const users = messages.filter((m) => m.role === "user").map((m) => JSON.stringify(m.content));
			expect(users.map((u) => /echo: (\S+ \d)/.exec(u)?.[1])).toEqual(sent.get(id));
		}
		expect(statuses.filter((s) => s !== 200 && s !== 503)).toEqual([]);
		// The follower's stream ended with the hibernation; from its last id the stream goes on with no gap.
		const before = await collect(await follow);
		const seen = before.filter((f) => f.id).at(-1)?.id as string;
		expect(before.at(-1)?.event).toBe("session_exit");
		const after = await collect(
			await (c as ClusterNode).fetch(`/v1/sessions/${ids[0]}/events`, { headers: { "last-event-id": seen } }),
			(f) => f.id !== undefined,
		);
		expect(after.map((f) => f.event)).toEqual(["stream_open", "session_status"]);
		expect(Number(after.at(-1)?.id)).toBe(Number(seen) + 1);
	});
});

describe("cluster mode: failures", () => {
	it("SIGKILL of the owner: its sessions resume elsewhere with the conversation, its dialogs answer 410, a stream reconnect gets a gap frame", async () => {
		const {
			nodes: [a, b, c],
		} = await cluster(["a", "b", "c"]);
		const kept = await create(a as ClusterNode);
		expect((await prompt(b as ClusterNode, kept, "echo: before the crash")).body.text).toBe("before the crash");
		const gated = await create(a as ClusterNode, { extensions: ["permission-gate"] });
		void (b as ClusterNode).api(`/v1/sessions/${gated}/prompt`, {
			method: "POST",
			json: { message: "bash: rm -rf ./x" },
		});
		const pending = await until(
			async () => (await (c as ClusterNode).api("/v1/approvals?status=pending")).body.approvals[0],
		);
		const last = (await (b as ClusterNode).api(`/v1/sessions/${kept}`)).body.lastEventId as number;
		const pids = await Promise.all(
			[kept, gated].map(async (id) => (await (a as ClusterNode).api(`/v1/sessions/${id}`)).body.pid as number),
		);
		// Written at once when the dialog opened: the next owner knows which dialogs died.
		await until(async () => {
			const stored = await rows(databaseUrlOf(a as ClusterNode), "SELECT record FROM sessions WHERE id = $1", [gated]);
			return JSON.parse(stored[0]?.record ?? "{}").pendingApprovals?.includes(pending.id);
		});

		const killedAt = Date.now();
		(a as ClusterNode).signal("SIGKILL");
		await (a as ClusterNode).exited;
		// Its pi processes go with it (the fence kills them when the gateway's pipe closes).
		await until(() => pids.every((pid) => !alive(pid)));
		// Within the lease TTL the sessions show stopped, owned by no live node, on every other node.
		await until(async () => {
			const listed = (await (c as ClusterNode).api("/v1/sessions")).body.sessions as { id: string; status: string }[];
			return listed.length === 2 && listed.every((s) => s.status === "stopped");
		}, leaseTtlMs + 5000);

		const gone = await (c as ClusterNode).api(`/v1/sessions/${gated}/approvals/${pending.id}`);
		expect(gone.status).toBe(410);
		expect(gone.body.code).toBe("approval_gone");
		// Sent to B, forwarded to A (refused: nothing reached it), held until A's lease runs out, served on B.
		const after = await prompt(b as ClusterNode, kept, "echo: after the crash");
		expect(after.status).toBe(200);
		console.log(
			`failover: a prompt through B answered ${Date.now() - killedAt} ms after SIGKILL of A (lease TTL ${leaseTtlMs} ms)`,
		);
		const messages = (await (c as ClusterNode).api(`/v1/sessions/${kept}/messages`)).body.messages as {
			role: string;
			content: unknown;
		}[];
		expect(messages.filter((m) => m.role === "user").map((m) => JSON.stringify(m.content))).toEqual([
			expect.stringContaining("before the crash"),
			expect.stringContaining("after the crash"),
		]);
		// A's log died with it: a client that saw up to `last` is told where the log goes on; how many
		// events A numbered past its last write cannot be known, so the gap says no count (issue 30).
		const frames = await collect(
			await (c as ClusterNode).fetch(`/v1/sessions/${kept}/events`, { headers: { "last-event-id": String(last) } }),
			(f) => f.event === "gap",
		);
		const gap = frames.at(-1)?.json;
		expect(frames.map((f) => f.event)).toEqual(["stream_open", "gap"]);
		expect(gap.after).toBe(last);
		expect(gap.firstAvailable).toBeGreaterThan(last + 1);
		expect(gap.lost).toBeUndefined();
		nodes.splice(nodes.indexOf(a as ClusterNode), 1);
	});

	it("split brain cannot happen: a paused owner's pi is killed before its lease runs out; the node that resumes the session is the only writer", async () => {
		const {
			databaseUrl,
			nodes: [a, b],
		} = await cluster(["a", "b"]);
		const id = await create(a as ClusterNode);
		expect((await prompt(a as ClusterNode, id, "echo: one")).status).toBe(200);
		const pid = (await (a as ClusterNode).api(`/v1/sessions/${id}`)).body.pid as number;
		(a as ClusterNode).signal("SIGSTOP");
		// The fence kills A's pi while A's lease still holds in the database: nobody may have taken the session yet.
		await until(() => !running(pid), leaseTtlMs * 2);
		const lease = await rows(databaseUrl, "SELECT lease_until > now() AS holds FROM nodes WHERE id = 'a'");
		expect(lease).toEqual([{ holds: true }]);
		await until(
			async () => (await rows(databaseUrl, "SELECT 1 FROM nodes WHERE id = 'a' AND lease_until < now()")).length === 1,
			leaseTtlMs * 2,
		);
		const two = await prompt(b as ClusterNode, id, "echo: two");
		expect(two.status).toBe(200);
		const onB = (await (b as ClusterNode).api(`/v1/sessions/${id}`)).body;
		expect(onB.pid).not.toBe(pid);

		(a as ClusterNode).signal("SIGCONT");
		// A wakes up, learns it lost its lease, drops everything, and joins again with nothing.
		await until(() => (a as ClusterNode).logs.some((l) => l.msg === "cluster: joined again, with no sessions"));
		expect((await (a as ClusterNode).api("/v1/info")).body.sessions).toBe(0);
		// Through A, the session is B's: its pi, its conversation (A wrote nothing after its pause).
		expect((await (a as ClusterNode).api(`/v1/sessions/${id}`)).body.pid).toBe(onB.pid);
		const three = await prompt(a as ClusterNode, id, "echo: three");
		expect(three.status).toBe(200);
		const messages = (await (a as ClusterNode).api(`/v1/sessions/${id}/messages`)).body.messages as {
			role: string;
			content: unknown;
		}[];
		expect(
			messages.filter((m) => m.role === "user").map((m) => /echo: (\w+)/.exec(JSON.stringify(m.content))?.[1]),
		).toEqual(["one", "two", "three"]);
		expect(await rows(databaseUrl, "SELECT owner FROM sessions WHERE id = $1", [id])).toEqual([{ owner: "b" }]);
	});

	it("a node that loses the database keeps its running sessions, refuses new ones with 503 and Retry-After, and recovers", async () => {
		root = mkdtempSync(join(tmpdir(), "pi-gateway-cluster-"));
		const direct = new URL(await server.freshDatabase());
		const proxy = await startProxy(Number(direct.port));
		try {
			const viaProxy = new URL(direct);
			viaProxy.port = String(proxy.port);
			const a = await startNode({ name: "a", databaseUrl: viaProxy.toString(), root, token, leaseTtlMs: 30_000 });
			nodes.push(a);
			const id = await create(a);
			await proxy.pause();
			const refused = await a.api("/v1/sessions", { method: "POST", json: {} });
			expect(refused.status).toBe(503);
			expect(refused.body.code).toBe("database_unavailable");
			expect(Number(refused.res.headers.get("retry-after"))).toBeGreaterThan(0);
			expect((await a.api("/readyz")).status).toBe(503);
			// What needs the database says so (503 to retry), never a 500.
			for (const path of ["/v1/sessions", "/v1/approvals/history", "/v1/audit"]) {
				const res = await a.api(path);
				expect(res.status, path).toBe(503);
				expect(res.body.code, path).toBe("database_unavailable");
			}
			const run = await prompt(a, id, "echo: still here");
			expect(run.status).toBe(200);
			expect(run.body.text).toBe("still here");
			await proxy.resume();
			await until(async () => (await a.api("/readyz")).status === 200);
			expect((await a.api("/v1/sessions", { method: "POST", json: {} })).status).toBe(201);
		} finally {
			await proxy.close();
		}
	});
});

const databaseUrlOf = (node: ClusterNode) => node.databaseUrl;

/** The process runs (a killed child of a paused parent stays a zombie until the parent reaps it). */
function running(pid: number): boolean {
	try {
		return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
	} catch {
		return false;
	}
}

describe("cluster mode: the all-sessions stream", () => {
	it("GET /v1/events on one node carries every node's sessions, also of a node that joined after it opened", async () => {
		const {
			databaseUrl,
			nodes: [a, b, c],
		} = await cluster(["a", "b", "c"]);
		const onA = await create(a as ClusterNode);
		const onB = await create(b as ClusterNode);
		const reader = new AbortController();
		const res = await (c as ClusterNode).fetch("/v1/events?types=agent_settled", { signal: reader.signal });
		const seen: string[] = [];
		const relayed: Frame[] = [];
		const reading = (async () => {
			for await (const frame of readFrames(res)) {
				relayed.push(frame);
				seen.push(
					frame.event === "stream_open"
						? `open:${frame.json.sessions
								.map((s: { id: string }) => s.id)
								.sort()
								.join(",")}`
						: `${frame.event}:${frame.id?.split(":")[0]}`,
				);
			}
		})().catch(() => {});
		await until(() => seen.length >= 1);
		expect(seen[0]).toBe(`open:${[onA, onB].sort().join(",")}`);
		// A fourth node joins after the stream opened: its sessions reach the stream too.
		const d = await startNode({ name: "d", databaseUrl, root, token, leaseTtlMs });
		nodes.push(d);
		const onD = await create(d);
		await until(async () => {
			await prompt(d, onD, "echo: d");
			return seen.includes(`agent_settled:${onD}`);
		}, 20_000);
		// Seconds after it opened, the first nodes' frames still come (their streams have no deadline).
		await prompt(a as ClusterNode, onA, "echo: a");
		await prompt(b as ClusterNode, onB, "echo: b");
		await until(() => seen.includes(`agent_settled:${onA}`) && seen.includes(`agent_settled:${onB}`));
		reader.abort();
		await reading;
		// A frame another node relays is that node's own: the same id (named by its session) and data.
		const own = await collect(
			await (a as ClusterNode).fetch(`/v1/sessions/${onA}/events?after=0&types=agent_settled`),
			(f) => f.event === "agent_settled",
		);
		const passed = relayed.find((f) => f.event === "agent_settled" && f.id?.startsWith(`${onA}:`));
		expect([passed?.id, passed?.data]).toEqual([`${onA}:${own.at(-1)?.id}`, own.at(-1)?.data]);
	});
});

describe("cluster mode: principals", () => {
	it("a session's owner and shares follow it across nodes and past its node's death", async () => {
		root = mkdtempSync(join(tmpdir(), "pi-gateway-cluster-"));
		const keysFile = join(root, "keys.json");
		const full = ["sessions:read", "sessions:write", "approvals:read", "approvals:answer"] as const;
		const alice = { authorization: `Bearer ${createKey(keysFile, "alice", [...full]).secret}` };
		const bob = { authorization: `Bearer ${createKey(keysFile, "bob", [...full]).secret}` };
		const databaseUrl = await server.freshDatabase();
		const started: ClusterNode[] = [];
		for (const name of ["a", "b", "c"]) {
			const node = await startNode({ name, databaseUrl, root, token, leaseTtlMs, extra: [`--keys-file=${keysFile}`] });
			nodes.push(node);
			started.push(node);
		}
		const [na, nb, nc] = started as [ClusterNode, ClusterNode, ClusterNode];
		const created = await na.api("/v1/sessions", { method: "POST", headers: alice, json: {} });
		expect(created.status).toBe(201);
		const id = created.body.id as string;
		// Through another node: alice's, not bob's (404, as for an id that never existed).
		expect((await nb.api(`/v1/sessions/${id}`, { headers: alice })).status).toBe(200);
		expect((await nb.api(`/v1/sessions/${id}`, { headers: bob })).status).toBe(404);
		expect((await nc.api("/v1/sessions", { headers: bob })).body.sessions).toEqual([]);
		expect((await nc.api("/v1/sessions", { headers: alice })).body.sessions).toHaveLength(1);
		const shared = await nc.api(`/v1/sessions/${id}/access`, {
			method: "PUT",
			headers: alice,
			json: { grants: [{ principal: "bob", can: ["read"] }] },
		});
		expect(shared.status).toBe(200);
		na.signal("SIGKILL");
		await na.exited;
		nodes.splice(nodes.indexOf(na), 1);
		// The next owner knows who owns it and whom it is shared with.
		const read = await nb.api(`/v1/sessions/${id}/messages`, { headers: bob });
		expect(read.status).toBe(200);
		const write = await nb.api(`/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			headers: bob,
			json: { message: "echo: no" },
		});
		expect(write.status).toBe(404);
		const mine = await nc.api(`/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			headers: alice,
			json: { message: "echo: yes" },
		});
		expect(mine.status).toBe(200);
	});
});

describe("cluster mode: membership", () => {
	it("a second process under a live node's name is refused: one name, one writer", async () => {
		const {
			databaseUrl,
			nodes: [a],
		} = await cluster(["a"]);
		await expect(startNode({ name: "a", databaseUrl, root: join(root, "twin"), token, leaseTtlMs })).rejects.toThrow(
			/another live gateway node is named a/,
		);
		expect((await (a as ClusterNode).api("/readyz")).status).toBe(200);
	});
});

describe("cluster mode: the audit log", () => {
	it("the owner records the client's address as the forwarding node saw it; a client cannot claim one", async () => {
		const {
			nodes: [a, b],
		} = await cluster(["a", "b"]);
		const id = await create(a as ClusterNode);
		// Through B, from 127.0.0.2 (a loopback address of its own), so the two hops differ.
		const status = await new Promise<number>((resolve, reject) => {
			const body = JSON.stringify({ message: "echo: from afar" });
			const req = httpRequest(
				`${(b as ClusterNode).url}/v1/sessions/${id}/prompt?wait=true`,
				{
					method: "POST",
					localAddress: "127.0.0.2",
					headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
				},
				(res) => {
					res.resume();
					res.on("end", () => resolve(res.statusCode ?? 0));
				},
			);
			req.on("error", reject);
			req.end(body);
		});
		expect(status).toBe(200);
		// Straight to A, claiming another address: not believed.
		const forged = await (a as ClusterNode).api(`/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			headers: { "x-pi-gateway-client": "203.0.113.9" },
			json: { message: "echo: nearby" },
		});
		expect(forged.status).toBe(200);
		// Read through B: the audit log is the cluster's, whichever node served the request (A writes
		// its entries behind, so B sees the second one a moment later).
		const prompts = async () =>
			((await (b as ClusterNode).api(`/v1/audit?sessionId=${id}`)).body.entries as { action: string; from: string }[])
				.filter((e) => e.action === "sessions.prompt")
				.map((e) => e.from);
		await until(async () => (await prompts()).length === 2);
		expect(await prompts()).toEqual(["127.0.0.1", "127.0.0.2"]);
	});
});

describe("cluster mode: takeover", () => {
	// A session taken over by a node must stay there for the request that took it: the node gives
	// stopped sessions back every second, and one it has just claimed is stopped until that request
	// starts pi. Found by the cluster benchmarks (bench/cluster-recovery.ts: a 404 after a failover).
	it("a session claimed by a request is not given back before that request is served", async () => {
		const {
			databaseUrl,
			nodes: [a, b],
		} = (await cluster(["a", "b"])) as { databaseUrl: string; nodes: [ClusterNode, ClusterNode] };
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
});

describe("cluster mode: remembered approval rules", () => {
	it("'allow for this session' answered on one node still answers the session's dialogs on the next", async () => {
		const {
			nodes: [a, b, c],
		} = await cluster(["a", "b", "c"]);
		const id = await create(a as ClusterNode, { extensions: ["permission-gate"] });
		const first = prompt(b as ClusterNode, id, "bash: rm -rf ./scratch");
		const pending = await until(
			async () => (await (c as ClusterNode).api("/v1/approvals?status=pending")).body.approvals[0],
		);
		const answered = await (c as ClusterNode).api(`/v1/sessions/${id}/approvals/${pending.id}`, {
			method: "POST",
			json: { value: "Allow", remember: "session" },
		});
		expect(answered.status).toBe(200);
		expect((await first).status).toBe(200);
		// The session moves (its node stops); the same dialog on the next node is answered by the rule.
		await (a as ClusterNode).stop();
		const again = await prompt(b as ClusterNode, id, "bash: rm -rf ./scratch");
		expect(again.status).toBe(200);
		// Both answers in the cluster's history (each node writes behind: polled).
		const resolvers = async () =>
			(
				(await (c as ClusterNode).api(`/v1/approvals/history?sessionId=${id}`)).body.approvals as {
					resolvedBy: string;
				}[]
			).map((h) => h.resolvedBy);
		await until(async () => (await resolvers()).length === 2);
		expect(await resolvers()).toEqual([expect.stringMatching(/^policy:remembered-/), "admin"]);
	});
});
