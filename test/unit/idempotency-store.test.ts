import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import { ConfigSchema, shareOf } from "../../src/config/config.ts";
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

	// Issue 41: bob's 250 cheap requests, each with its own key, evicted alice's key (one cap for all).
	it("fair shares: bob's flood evicts only his own oldest keys; alice's key and answer stay", () => {
		const db = new DatabaseSync(":memory:");
		const store = new IdempotencyStore(db, 60_000, 10, 4);
		const alice = { principal: "alice", key: "hers" };
		expect(store.claim(alice, "fp")).toBe(true);
		store.finish(alice, answer);
		for (let i = 0; i < 250; i++) {
			const key = { principal: "bob", key: `k${i}` };
			expect(store.claim(key, "fp")).toBe(true);
			store.finish(key, answer);
		}
		expect(store.get(alice)).toMatchObject({ state: "done", answer });
		// Bob keeps his share, his newest four.
		const kept = Array.from({ length: 250 }, (_, i) => i).filter((i) => store.get({ principal: "bob", key: `k${i}` }));
		expect(kept).toEqual([246, 247, 248, 249]);
	});

	it("past the cap the principal that holds the most gives up its oldest, never one that holds less", () => {
		const db = new DatabaseSync(":memory:");
		const store = new IdempotencyStore(db, 60_000, 10, 4);
		const add = (principal: string, key: string) => {
			expect(store.claim({ principal, key }, "fp")).toBe(true);
			store.finish({ principal, key }, answer);
		};
		add("alice", "a1");
		add("alice", "a2");
		for (const principal of ["bob", "carol", "dave"]) for (let i = 0; i < 8; i++) add(principal, `${principal}${i}`);
		const held = db
			.prepare("SELECT principal, count(*) AS n FROM idempotency_keys GROUP BY principal ORDER BY principal")
			.all() as { principal: string; n: number }[];
		expect(held.reduce((sum, row) => sum + row.n, 0)).toBe(10);
		expect(held[0]).toEqual({ principal: "alice", n: 2 });
		// The three others share what is left, none more than one above another.
		const others = held.slice(1).map((row) => row.n);
		expect(Math.max(...others) - Math.min(...others)).toBeLessThanOrEqual(1);
		expect(store.get({ principal: "alice", key: "a1" })).toMatchObject({ state: "done" });
		// A key still running is never evicted: its retry must not run a second time.
		expect(store.claim({ principal: "erin", key: "slow" }, "fp")).toBe(true);
		for (let i = 0; i < 8; i++) add("erin", `e${i}`);
		expect(store.get({ principal: "erin", key: "slow" })).toMatchObject({ state: "running" });
	});

	it("by default a principal's share is a tenth of the cap, below it", () => {
		const defaults = ConfigSchema.parse({});
		const share = shareOf(defaults.maxIdempotencyKeys, defaults.maxIdempotencyKeysPerPrincipal);
		expect(share).toBe(1000);
		expect(share).toBeLessThan(defaults.maxIdempotencyKeys);
		const store = new IdempotencyStore(new DatabaseSync(":memory:"), 60_000, 100);
		for (let i = 0; i < 50; i++) {
			store.claim({ principal: "bob", key: `k${i}` }, "fp");
			store.finish({ principal: "bob", key: `k${i}` }, answer);
		}
		expect(store.get({ principal: "bob", key: "k39" })).toBeUndefined();
		expect(store.get({ principal: "bob", key: "k40" })).toMatchObject({ state: "done" });
	});

	it("a gateway.db from before the counts: its keys are counted when the store opens", () => {
		const db = new DatabaseSync(":memory:");
		db.exec(`CREATE TABLE idempotency_keys (principal TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL,
			state TEXT NOT NULL, answer TEXT, created_at INTEGER NOT NULL, PRIMARY KEY (principal, key))`);
		const insert = db.prepare("INSERT INTO idempotency_keys VALUES (?, ?, 'fp', 'done', ?, ?)");
		for (let i = 0; i < 6; i++) insert.run("bob", `k${i}`, JSON.stringify(answer), Date.now() - 1000 + i);
		insert.run("alice", "hers", JSON.stringify(answer), Date.now() - 2000);
		const store = new IdempotencyStore(db, 60_000, 100, 4);
		expect(store.claim({ principal: "bob", key: "new" }, "fp")).toBe(true);
		// Bob's three oldest go for his new one; alice's older key stays.
		expect(store.get({ principal: "bob", key: "k2" })).toBeUndefined();
		expect(store.get({ principal: "bob", key: "k3" })).toMatchObject({ state: "done" });
		expect(store.get({ principal: "alice", key: "hers" })).toMatchObject({ state: "done" });
	});
});
