import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
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
		const store = new SqliteWebhookStore(new DatabaseSync(":memory:"));
		for (let n = 0; n < 10; n++) store.enqueue("wh_a", message(n), 3);
		store.enqueue("wh_b", message(0), 3);
		const rows = store.deliveries("wh_a", 100);
		expect(rows.filter((d) => d.state === "pending").map((d) => d.id)).toEqual(["msg_9", "msg_8", "msg_7"]);
		expect(rows.filter((d) => d.state === "dropped")).toHaveLength(7);
		expect(store.deliveries("wh_b", 100).map((d) => d.state)).toEqual(["pending"]);
		store.prune("wh_a", 2);
		expect(store.deliveries("wh_a", 100)).toHaveLength(5);
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
		expect(await refused(d, "http://10.1.2.3/")).toBe(false);
		expect(await refused(d, "http://[2001:db8::1]/")).toBe(false);
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
