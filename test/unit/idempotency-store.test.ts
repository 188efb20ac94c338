import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import { IdempotencyStore } from "../../src/http/idempotency-store.ts";

const answer = { status: 201, headers: {}, body: "{}" };

describe("IdempotencyStore (SQLite)", () => {
	it("keeps one record per principal and key", () => {
		const store = new IdempotencyStore(new DatabaseSync(":memory:"), 60_000, 10);
		const alice = { principal: "alice", key: "k" };
		const bob = { principal: "bob", key: "k" };
		expect(store.claim(alice, "fp")).toBe(true);
		expect(store.get(bob)).toBeUndefined();
		expect(store.claim(bob, "fp")).toBe(true);
		store.finish(alice, answer);
		expect(store.get(alice)).toMatchObject({ state: "done", answer });
		expect(store.get(bob)).toMatchObject({ state: "running" });
		store.forget(bob);
		expect(store.get(alice)).toMatchObject({ state: "done" });
	});

	it("upgrades a gateway.db whose table was keyed by the key alone: those rows name nobody and go", () => {
		const db = new DatabaseSync(":memory:");
		db.exec(`CREATE TABLE idempotency_keys (key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, state TEXT NOT NULL,
			answer TEXT, created_at INTEGER NOT NULL)`);
		db.prepare("INSERT INTO idempotency_keys VALUES ('k', 'fp', 'done', ?, ?)").run(JSON.stringify(answer), Date.now());
		const store = new IdempotencyStore(db, 60_000, 10);
		expect(store.get({ principal: "alice", key: "k" })).toBeUndefined();
		expect(store.claim({ principal: "alice", key: "k" }, "fp")).toBe(true);
	});
});
