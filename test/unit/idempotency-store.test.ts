import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import { IdempotencyStore } from "../../src/store/sqlite/idempotency.ts";

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

	it("a full database: a claim is 507; an answer that could not be written is kept, replayed, written later", () => {
		const db = new DatabaseSync(":memory:");
		const store = new IdempotencyStore(db, 60_000, 10);
		const alice = { principal: "alice", key: "k" };
		expect(store.claim(alice, "fp")).toBe(true);
		// SQLITE_FULL without a disk: the database may not grow past its pages, which are then filled.
		db.exec("CREATE TABLE ballast (b BLOB)");
		const pages = (db.prepare("PRAGMA page_count").get() as { page_count: number }).page_count;
		db.exec(`PRAGMA max_page_count = ${pages}`);
		for (let size = 4096; size >= 1; size = Math.floor(size / 2))
			for (;;)
				try {
					db.prepare("INSERT INTO ballast VALUES (?)").run(Buffer.alloc(size));
				} catch {
					break;
				}
		const big = { status: 201, headers: {}, body: "x".repeat(10_000) };
		store.finish(alice, big);
		expect(store.get(alice)).toMatchObject({ state: "done", answer: big });
		expect(() => store.claim({ principal: "bob", key: "k" }, "fp")).toThrow(
			expect.objectContaining({ status: 507, code: "insufficient_storage" }),
		);
		db.exec("PRAGMA max_page_count = 1000000"); // room again
		expect(store.claim({ principal: "bob", key: "k" }, "fp")).toBe(true);
		const row = db.prepare("SELECT state, answer FROM idempotency_keys WHERE principal = 'alice'").get();
		expect(row).toEqual({ state: "done", answer: JSON.stringify(big) });
	});
});
