import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import { SqliteAccessStore } from "../../src/store/sqlite/access.ts";
import { SqliteWebhookStore } from "../../src/store/sqlite/webhooks.ts";
import { Destinations } from "../../src/webhooks/destinations.ts";

const message = (n: number) => ({
	id: `msg_${n}`,
	type: "run.settled" as const,
	payload: JSON.stringify({ n }),
	createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString(),
});

describe("the webhook outbox", () => {
	it("holds at most maxPending undelivered messages per webhook: the oldest are dropped, not kept waiting", () => {
		const store = new SqliteWebhookStore(new DatabaseSync(":memory:"), 3);
		for (let n = 0; n < 10; n++) store.enqueue("wh_a", message(n), 3);
		store.enqueue("wh_b", message(0), 3);
		const rows = store.deliveries("wh_a", 100);
		expect(rows.filter((d) => d.state === "pending").map((d) => d.id)).toEqual(["msg_9", "msg_8", "msg_7"]);
		expect(rows.filter((d) => d.state === "dropped")).toHaveLength(7);
		expect(store.deliveries("wh_b", 100).map((d) => d.state)).toEqual(["pending"]);
		// The operator's messages (no session owner: principal admin) are held to the cap alone.
		store.prune("wh_a", 20);
		expect(store.deliveries("wh_a", 100)).toHaveLength(10);
		store.prune("wh_a", 4);
		expect(store.deliveries("wh_a", 100).filter((d) => d.state === "dropped")).toHaveLength(4);
	});

	it("keeps the attempt log bounded and schedules by next_at", () => {
		const store = new SqliteWebhookStore(new DatabaseSync(":memory:"));
		store.enqueue("wh_a", message(1), 10);
		let delivery = store.due(Date.now() + 1, 10)[0];
		for (let i = 0; i < 30; i++) {
			if (!delivery) throw new Error("the message is gone");
			store.settle(delivery, { at: "", status: 500, error: null, durationMs: 1 }, "pending", Date.now() + 60_000);
			delivery = store.get("wh_a", "msg_1");
		}
		expect(delivery?.attempts).toBe(30);
		expect(delivery?.log).toHaveLength(20);
		expect(store.due(Date.now(), 10)).toEqual([]);
		expect(store.nextDue()).toBeGreaterThan(Date.now());
	});
});

/** A gateway.db whose sessions belong to alice (s_alice) and bob (s_bob), and a message about one of them. */
function owned(): DatabaseSync {
	const db = new DatabaseSync(":memory:");
	const access = new SqliteAccessStore(db);
	access.save({ sessionId: "s_alice", owner: "alice", grants: [] });
	access.save({ sessionId: "s_bob", owner: "bob", grants: [] });
	return db;
}
const about = (sessionId: string, n: number) => ({
	...message(n),
	payload: JSON.stringify({ type: "run.settled", timestamp: "", data: { sessionId } }),
});

// Issue 41: a webhook's outbox was one queue for every session: the events of bob's sessions pushed
// the undelivered messages of alice's out (dropped) and kept them waiting behind his.
describe("the webhook outbox's fair shares", () => {
	it("bob's flood drops only his own oldest messages; alice's stay pending", () => {
		const store = new SqliteWebhookStore(owned(), 4);
		expect(store.enqueue("wh_a", about("s_alice", 0), 10)).toEqual([]);
		expect(store.enqueue("wh_a", about("s_alice", 1), 10)).toEqual([]);
		const dropped: string[] = [];
		for (let n = 2; n < 252; n++) dropped.push(...store.enqueue("wh_a", about("s_bob", n), 10));
		const pending = store
			.deliveries("wh_a", 1000)
			.filter((d) => d.state === "pending")
			.map((d) => d.id);
		expect(pending).toEqual(["msg_251", "msg_250", "msg_249", "msg_248", "msg_1", "msg_0"]);
		expect(dropped).toHaveLength(246);
		expect(dropped).not.toContain("msg_0");
	});

	it("past the webhook's cap the principal with the most pending gives up its oldest; a session nobody owns counts as the admin's", () => {
		const store = new SqliteWebhookStore(owned(), 4);
		for (let n = 0; n < 2; n++) store.enqueue("wh_a", about("s_alice", n), 6);
		for (let n = 2; n < 6; n++) store.enqueue("wh_a", about("s_bob", n), 6);
		expect(store.enqueue("wh_a", about("s_gone", 6), 6)).toEqual(["msg_2"]);
		expect(store.enqueue("wh_a", about("s_gone", 7), 6)).toEqual(["msg_3"]);
		// Now bob and the admin hold two each, as alice does: the newest of the three goes at the next.
		const pending = store.deliveries("wh_a", 100).filter((d) => d.state === "pending");
		expect(pending.map((d) => d.id).sort()).toEqual(["msg_0", "msg_1", "msg_4", "msg_5", "msg_6", "msg_7"]);
	});

	it("a principal's messages do not wait behind another's: each principal's oldest due comes first", () => {
		const store = new SqliteWebhookStore(owned(), 1000);
		for (let n = 0; n < 50; n++) store.enqueue("wh_a", about("s_bob", n), 1000);
		store.enqueue("wh_a", about("s_alice", 50), 1000);
		const now = Date.now() + 1;
		expect(store.due(now, 2).map((d) => d.id)).toEqual(["msg_0", "msg_50"]);
		// Bob's first three are in flight (still pending): alice's is among the next taken.
		expect(
			store
				.due(now, 4)
				.map((d) => d.id)
				.filter((id) => !["msg_0", "msg_1", "msg_2"].includes(id)),
		).toContain("msg_50");
	});

	it("the delivery log keeps alice's settled messages whatever bob's sessions send", () => {
		const store = new SqliteWebhookStore(owned(), 1000);
		const settle = (sessionId: string, n: number) => {
			store.enqueue("wh_a", about(sessionId, n), 1000);
			const delivery = store.get("wh_a", `msg_${n}`);
			if (!delivery) throw new Error("not queued");
			store.settle(delivery, { at: "", status: 200, error: null, durationMs: 1 }, "delivered", null);
			store.prune("wh_a", 40);
		};
		settle("s_alice", 0);
		settle("s_alice", 1);
		for (let n = 2; n < 102; n++) settle("s_bob", n);
		const log = store.deliveries("wh_a", 1000).map((d) => d.id);
		// Bob keeps a tenth of the log (his newest four), alice all of hers.
		expect(log).toEqual(["msg_101", "msg_100", "msg_99", "msg_98", "msg_1", "msg_0"]);
	});

	it("an outbox from before (no principal column) is upgraded: its messages belong to their sessions' owners", () => {
		const db = owned();
		db.exec(`CREATE TABLE webhook_outbox (id TEXT NOT NULL, webhook_id TEXT NOT NULL, type TEXT NOT NULL,
			payload TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL, next_at INTEGER, created_at TEXT NOT NULL,
			log TEXT NOT NULL, PRIMARY KEY (webhook_id, id))`);
		const old = about("s_alice", 0);
		db.prepare("INSERT INTO webhook_outbox VALUES (?, 'wh_a', 'run.settled', ?, 'pending', 0, 0, ?, '[]')").run(
			old.id,
			old.payload,
			old.createdAt,
		);
		const store = new SqliteWebhookStore(db, 2);
		for (let n = 1; n < 20; n++) store.enqueue("wh_a", about("s_bob", n), 4);
		expect(store.get("wh_a", "msg_0")?.state).toBe("pending");
	});

	it("a message adopted from another node keeps its principal (cluster mode), else its session's owner", () => {
		const store = new SqliteWebhookStore(owned(), 2);
		const adopted = {
			id: "msg_x",
			webhookId: "wh_a",
			type: "run.settled" as const,
			state: "pending" as const,
			attempts: 3,
			nextAttemptAt: null,
			createdAt: message(0).createdAt,
			payload: { type: "run.settled", data: { sessionId: "s_unknown_here" } },
			log: [],
		};
		store.adopt({ ...adopted, principal: "alice" });
		store.adopt({ ...adopted, id: "msg_y", payload: { data: { sessionId: "s_alice" } } });
		for (let n = 1; n < 20; n++) store.enqueue("wh_a", about("s_bob", n), 4);
		expect(store.get("wh_a", "msg_x")?.state).toBe("pending");
		expect(store.get("wh_a", "msg_y")?.state).toBe("pending");
		// Adopted again (the same message), it is counted once.
		store.adopt({ ...adopted, principal: "alice" });
		expect(store.enqueue("wh_a", about("s_alice", 30), 100)).toEqual(["msg_x"]);
	});
});

describe("webhook destinations", () => {
	const refused = async (d: Destinations, url: string) =>
		d.resolve(new URL(url)).then(
			() => false,
			() => true,
		);

	it("refuse link-local, metadata and loopback by default, IPv4-mapped forms too, and allow the rest", async () => {
		const d = new Destinations([]);
		for (const url of [
			"http://169.254.169.254/",
			"http://[::ffff:a9fe:a9fe]/",
			"http://[fd00:ec2::254]/",
			"http://127.0.0.2/",
			"http://0.0.0.0/",
		])
			expect(await refused(d, url), url).toBe(true);
		expect(await refused(d, "http://93.184.216.34/")).toBe(false);
		expect(await refused(d, "http://[2606:4700::1111]/")).toBe(false);
	});

	it("with --webhook-allow, reach only what is listed, and a listed range lifts the default refusal", async () => {
		const d = new Destinations(["10.0.0.0/8", "loopback"]);
		expect(await refused(d, "http://10.9.9.9/")).toBe(false);
		expect(await refused(d, "http://127.0.0.1/")).toBe(false);
		expect(await refused(d, "http://192.168.1.1/")).toBe(true);
		expect(await refused(d, "http://169.254.169.254/")).toBe(true);
		expect(() => new Destinations(["10.0.0.0/40"])).toThrow("not a CIDR");
	});
});
