import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Webhook } from "standardwebhooks";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { type ClusterNode, startNode } from "../helpers/cluster.ts";
import { alive, until } from "../helpers/gateway.ts";
import { query, startTestPostgres, type TestPostgres } from "../helpers/postgres.ts";
import { type Received, startReceiver } from "../helpers/receiver.ts";

// Several gateway processes and real pi per test, and waits on leases: a busy machine needs room.
vi.setConfig({ testTimeout: 90_000, hookTimeout: 60_000 });

// Cluster-wide stores with real pi (demo model): webhook definitions and Idempotency-Key answers
// live in PostgreSQL, so what a client did through one node holds on every node.
const token = "cluster-stores-token";
let server: TestPostgres;
let root: string;
const nodes: ClusterNode[] = [];
const cleanup: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
	server = await startTestPostgres();
});
afterEach(async () => {
	await Promise.all(nodes.splice(0).map((n) => n.stop()));
	for (const step of cleanup.splice(0)) await step();
	if (root) rmSync(root, { recursive: true, force: true });
});
afterAll(async () => {
	await server?.stop();
});

async function cluster(names: string[], extra: string[] = []): Promise<ClusterNode[]> {
	root = mkdtempSync(join(tmpdir(), "pi-gateway-cstores-"));
	const databaseUrl = await server.freshDatabase();
	const started: ClusterNode[] = [];
	for (const name of names) {
		// Receivers run on 127.0.0.1: every node must be allowed to deliver there.
		const node = await startNode({
			name,
			databaseUrl,
			root,
			token,
			leaseTtlMs: 5000,
			extra: ["--webhook-allow=loopback", ...extra],
		});
		nodes.push(node);
		started.push(node);
	}
	return started;
}

/** Checks a delivery's signature with the standardwebhooks package, as a receiver would. */
function verified(secret: string, r: Received) {
	return new Webhook(secret).verify(r.body, {
		"webhook-id": String(r.headers["webhook-id"]),
		"webhook-timestamp": String(r.headers["webhook-timestamp"]),
		"webhook-signature": String(r.headers["webhook-signature"]),
	});
}

const prompt = (node: ClusterNode, id: string, message: string) =>
	node.api(`/v1/sessions/${id}/prompt?wait=true`, { method: "POST", json: { message } });

describe("cluster mode: webhooks are shared by every node", () => {
	it("a webhook made through A is listed on B, signs B's deliveries for B's session, and deleted through C it stops everywhere", async () => {
		const [a, b, c] = (await cluster(["a", "b", "c"])) as [ClusterNode, ClusterNode, ClusterNode];
		const first = await startReceiver();
		const second = await startReceiver();
		cleanup.push(first.close, second.close);

		const made = await a.api("/v1/webhooks", { method: "POST", json: { url: first.url, events: ["run.settled"] } });
		expect(made.status).toBe(201);
		const hook = made.body as { id: string; secret: string };
		// Read your writes: the next request, through any node, sees it.
		for (const node of [b, c]) {
			const listed = (await node.api("/v1/webhooks")).body.webhooks;
			expect(listed).toEqual([expect.objectContaining({ id: hook.id, url: first.url, events: ["run.settled"] })]);
			expect((await node.api(`/v1/webhooks/${hook.id}`)).status).toBe(200);
		}

		// A session B owns, prompted through C (forwarded to B): B delivers its run.settled.
		const created = await b.api("/v1/sessions", { method: "POST", json: {} });
		expect(created.status).toBe(201);
		const id = created.body.id as string;
		expect((await prompt(c, id, "echo: one")).status).toBe(200);
		const delivered = await until(() => first.of("run.settled").find((r) => r.json.data.sessionId === id));
		expect(verified(hook.secret, delivered)).toMatchObject({ type: "run.settled", data: { sessionId: id } });
		// The outbox is the owner's: B's delivery log has it (marked delivered once the receiver's answer is back).
		const log = await until(async () => {
			const deliveries = (await b.api(`/v1/webhooks/${hook.id}/deliveries`)).body.deliveries;
			return deliveries[0]?.state === "delivered" && deliveries;
		});
		expect(log).toEqual([expect.objectContaining({ id: delivered.headers["webhook-id"], state: "delivered" })]);

		// Deleted through C: B hears of it without being asked (its log says so) and sends no more.
		expect((await c.fetch(`/v1/webhooks/${hook.id}`, { method: "DELETE" })).status).toBe(204);
		await until(() => b.logs.some((l) => l.msg === "webhooks: reloaded" && (l.removed as string[])?.includes(hook.id)));
		// A second webhook, made after the delete, shows when the next run's event has gone out.
		const next = await a.api("/v1/webhooks", { method: "POST", json: { url: second.url, events: ["run.settled"] } });
		expect(next.status).toBe(201);
		// B fires it once it has heard of it (docs/webhooks.md: LISTEN/NOTIFY, at once; a busy machine
		// showed a run settling first, whose event then went to no second webhook).
		await until(() =>
			b.logs.some((l) => l.msg === "webhooks: reloaded" && (l.added as string[])?.includes(next.body.id)),
		);
		expect((await prompt(a, id, "echo: two")).status).toBe(200);
		const after = await until(() => second.of("run.settled").find((r) => r.json.data.sessionId === id));
		expect(verified(next.body.secret, after)).toBeTruthy();
		expect(first.of("run.settled")).toHaveLength(1);
		for (const node of [a, b, c]) {
			expect((await node.api(`/v1/webhooks/${hook.id}`)).status).toBe(404);
			expect((await node.api("/v1/webhooks")).body.webhooks.map((w: { id: string }) => w.id)).toEqual([next.body.id]);
		}
	});
});

describe("cluster mode: undelivered webhook messages outlive their node", () => {
	it("a message A could not deliver is sent by B once A's lease runs out (same webhook-id, A's attempt in its log); A, resumed, does not send it again", async () => {
		// A's retry comes 4–8 s after its failed attempt: B's adoption (A's 5 s lease, then B's next look) is what sends it.
		const [a, b] = (await cluster(["a", "b"], ["--webhook-retry-base-ms=8000"])) as [ClusterNode, ClusterNode];
		const receiver = await startReceiver((n) => (n === 0 ? 503 : 204));
		cleanup.push(receiver.close);
		const made = await a.api("/v1/webhooks", { method: "POST", json: { url: receiver.url, events: ["run.settled"] } });
		expect(made.status).toBe(201);
		const hook = made.body as { id: string; secret: string };
		const created = await a.api("/v1/sessions", { method: "POST", json: {} });
		expect(created.status).toBe(201);
		const id = created.body.id as string;
		expect((await prompt(a, id, "echo: one")).status).toBe(200);

		const first = await until(() => receiver.received[0]);
		expect(first.status).toBe(503);
		const messageId = String(first.headers["webhook-id"]);
		// A's record in the cluster shows the failed attempt (written behind, so wait for it).
		const record = () =>
			query(a.databaseUrl, "SELECT node, state, attempts FROM webhook_outbox WHERE id = $1", [messageId]);
		await until(async () => (await record())[0]?.attempts === 1);
		expect(await record()).toEqual([{ node: "a", state: "pending", attempts: 1 }]);

		a.signal("SIGSTOP");
		const second = await until(() => receiver.received[1], 40_000);
		expect(second.headers["webhook-id"]).toBe(messageId);
		expect(verified(hook.secret, second)).toMatchObject({ type: "run.settled", data: { sessionId: id } });
		// B's log reaches this side through a pipe, which a busy machine can deliver after the message.
		await until(() =>
			b.logs.some((l) => l.msg === "webhooks: adopted the undelivered messages of a node that is gone"),
		);
		const onB = (await b.api(`/v1/webhooks/${hook.id}/deliveries`)).body.deliveries;
		expect(onB).toEqual([expect.objectContaining({ id: messageId, state: "delivered", attempts: 2 })]);
		expect(onB[0].log.map((attempt: { status: number }) => attempt.status)).toEqual([503, 204]);
		await until(async () => (await record())[0]?.state === "done");
		expect(await record()).toEqual([expect.objectContaining({ node: "b", state: "done" })]);

		// A wakes up, finds that B holds the message now, and forgets its copy instead of sending it again.
		a.signal("SIGCONT");
		await until(
			() => a.logs.some((l) => l.msg === "webhooks: another node holds this message now; forgotten here"),
			30_000,
		);
		expect((await a.api(`/v1/webhooks/${hook.id}/deliveries`)).body.deliveries).toEqual([]);
		expect(receiver.received).toHaveLength(2);
	});
});

describe("cluster mode: a stopping node hands its undelivered webhook messages over", () => {
	it("A stopped (SIGTERM) with a message waiting for its retry: B adopts it and sends it when the retry is due", async () => {
		// A's retry is due 5–10 s after its failed attempt; A is stopped before that, so only B can send it.
		const [a, b] = (await cluster(["a", "b"], ["--webhook-retry-base-ms=10000"])) as [ClusterNode, ClusterNode];
		const receiver = await startReceiver((n) => (n === 0 ? 503 : 204));
		cleanup.push(receiver.close);
		const hook = (await a.api("/v1/webhooks", { method: "POST", json: { url: receiver.url, events: ["run.settled"] } }))
			.body as { id: string };
		const id = (await a.api("/v1/sessions", { method: "POST", json: {} })).body.id as string;
		expect((await prompt(a, id, "echo: one")).status).toBe(200);
		const first = await until(() => receiver.received[0]);
		expect(first.status).toBe(503);

		await a.stop();
		nodes.splice(nodes.indexOf(a), 1);
		expect(
			a.logs.some((l) => l.msg === "webhooks: undelivered messages not handed over; they wait for this node"),
		).toBe(false);
		const second = await until(() => receiver.received[1], 30_000);
		expect(b.logs.some((l) => l.msg === "webhooks: adopted the undelivered messages of a node that is gone")).toBe(
			true,
		);
		expect(second.headers["webhook-id"]).toBe(first.headers["webhook-id"]);
		const onB = (await b.api(`/v1/webhooks/${hook.id}/deliveries`)).body.deliveries;
		expect(onB).toEqual([
			expect.objectContaining({ id: first.headers["webhook-id"], state: "delivered", attempts: 2 }),
		]);
	});
});

describe("cluster mode: Idempotency-Key holds across nodes", () => {
	const create = (node: ClusterNode, key: string, json: Record<string, unknown>) =>
		node.api("/v1/sessions", { method: "POST", json, headers: { "idempotency-key": key } });

	it("the same key on A then on B creates one session; B answers A's stored answer, 422 for another body", async () => {
		const [a, b] = (await cluster(["a", "b"])) as [ClusterNode, ClusterNode];
		const first = await create(a, "create-once", { name: "once" });
		expect(first.status).toBe(201);
		expect(first.res.headers.get("idempotent-replayed")).toBeNull();
		// The retry a load balancer sent to B.
		const retry = await create(b, "create-once", { name: "once" });
		expect(retry.status).toBe(201);
		expect(retry.res.headers.get("idempotent-replayed")).toBe("true");
		expect(retry.body).toEqual(first.body);
		expect(retry.res.headers.get("location")).toBe(first.res.headers.get("location"));
		const other = await create(b, "create-once", { name: "twice" });
		expect(other.status).toBe(422);
		expect(other.body.code).toBe("idempotency_key_reused");
		for (const node of [a, b])
			expect((await node.api("/v1/sessions")).body.sessions.map((s: { id: string }) => s.id)).toEqual([first.body.id]);
	});

	it("the same key on A and B at once: one session; the other answer is 409 while it runs, or the stored answer", async () => {
		const [a, b] = (await cluster(["a", "b"])) as [ClusterNode, ClusterNode];
		const answers = await Promise.all([create(a, "at-once", {}), create(b, "at-once", {})]);
		const fresh = answers.filter((r) => r.status === 201 && r.res.headers.get("idempotent-replayed") === null);
		expect(fresh).toHaveLength(1);
		const winner = fresh[0]?.body.id as string;
		for (const r of answers.filter((x) => x !== fresh[0])) {
			if (r.status === 409) expect(r.body.code).toBe("idempotency_key_in_use");
			else expect(r).toMatchObject({ status: 201, body: { id: winner } });
		}
		// Once the first has answered, every node replays it.
		for (const node of [a, b]) {
			const again = await create(node, "at-once", {});
			expect(again.status).toBe(201);
			expect(again.body.id).toBe(winner);
		}
		expect((await a.api("/v1/sessions")).body.sessions.map((s: { id: string }) => s.id)).toEqual([winner]);
	});

	const send = (node: ClusterNode, id: string, key: string, message: string) =>
		node.api(`/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			json: { message },
			headers: { "idempotency-key": key },
		});
	const userMessages = async (node: ClusterNode, id: string) =>
		((await node.api(`/v1/sessions/${id}/messages`)).body.messages as { role: string; content: unknown }[])
			.filter((m) => m.role === "user")
			.map((m) => JSON.stringify(m.content));

	it("a prompt answered on A is replayed after its session moved to B (A stopped): pi does not run it twice", async () => {
		const [a, b] = (await cluster(["a", "b"])) as [ClusterNode, ClusterNode];
		const created = await a.api("/v1/sessions", { method: "POST", json: {} });
		const id = created.body.id as string;
		const first = await send(a, id, "prompt-once", "echo: once");
		expect(first.status).toBe(200);
		// A rolling restart: A gives its sessions back; the retry lands on B, which takes the session.
		await a.stop();
		const retry = await send(b, id, "prompt-once", "echo: once");
		expect(retry.status).toBe(200);
		expect(retry.res.headers.get("idempotent-replayed")).toBe("true");
		expect(retry.body).toEqual(first.body);
		expect(await userMessages(b, id)).toEqual([expect.stringContaining("once")]);
	});

	it("a key left running by a node that died is free once that node's lease runs out: the retry runs", async () => {
		const [a, b] = (await cluster(["a", "b"])) as [ClusterNode, ClusterNode];
		const created = await a.api("/v1/sessions", { method: "POST", json: { extensions: ["permission-gate"] } });
		const id = created.body.id as string;
		// A settled run first: its conversation is what the next owner resumes.
		expect((await prompt(b, id, "echo: hello")).status).toBe(200);
		// Held on A by the gate's dialog: the key is `running` there.
		void send(b, id, "cut-short", "bash: rm -rf ./x").catch(() => {});
		const pending = await until(async () => (await b.api("/v1/approvals?status=pending")).body.approvals[0]);
		const busy = await send(b, id, "cut-short", "bash: rm -rf ./x");
		expect(busy.status).toBe(409);
		expect(busy.body.code).toBe("idempotency_key_in_use");

		const pid = (await a.api(`/v1/sessions/${id}`)).body.pid as number;
		a.signal("SIGKILL");
		await a.exited;
		nodes.splice(nodes.indexOf(a), 1);
		await until(() => !alive(pid));
		// The retry through B waits for A's lease to run out, takes the session and runs the prompt again.
		const retry = send(b, id, "cut-short", "bash: rm -rf ./x");
		const again = await until(async () => {
			const open = (await b.api("/v1/approvals?status=pending")).body.approvals as { id: string }[];
			return open.find((x) => x.id !== pending.id);
		}, 15_000);
		expect(
			(await b.api(`/v1/sessions/${id}/approvals/${again.id}`, { method: "POST", json: { value: "Block" } })).status,
		).toBe(200);
		const done = await retry;
		expect(done.status).toBe(200);
		expect(done.res.headers.get("idempotent-replayed")).toBeNull();
		expect(done.body.text).toContain("Blocked");
		const replay = await send(b, id, "cut-short", "bash: rm -rf ./x");
		expect(replay.res.headers.get("idempotent-replayed")).toBe("true");
		expect(replay.body).toEqual(done.body);
	});
});
