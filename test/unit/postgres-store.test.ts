import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import pg from "pg";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { PostgresDatabase } from "../../src/store/postgres/database.ts";
import { migrate, migrations } from "../../src/store/postgres/sessions.ts";
import { lease, query, startTestPostgres, type TestPostgres } from "../helpers/postgres.ts";
import { storedSession } from "../helpers/stored-session.ts";

/**
 * PostgresStore (cluster mode): it restores nothing at start and takes sessions on demand: claims,
 * releases, fenced writes, the conversation copy, fail-soft writes, migrations. SQLite's restore
 * at start, tombstones and unclean stops are in sqlite-store.test.ts.
 */
let server: TestPostgres;
beforeAll(async () => {
	server = await startTestPostgres();
});
afterAll(async () => {
	await server?.stop();
});

let dir: string;
beforeEach(() => {
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-store-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const record = storedSession;

describe("PostgresStore", () => {
	it("migrates once when several nodes start at once (advisory lock), and not again after", async () => {
		const url = await server.freshDatabase();
		const pools = Array.from({ length: 4 }, () => new pg.Pool({ connectionString: url, max: 1 }));
		try {
			const applied = await Promise.all(pools.map((p) => migrate(p)));
			expect(applied.flat().sort((a, b) => a - b)).toEqual(migrations.map((m) => m.version));
			const { rows } = await (pools[0] as pg.Pool).query("SELECT version FROM pi_gateway_migrations ORDER BY version");
			expect(rows.map((r) => r.version)).toEqual(migrations.map((m) => m.version));
			expect(await migrate(pools[0] as pg.Pool)).toEqual([]);
		} finally {
			await Promise.all(pools.map((p) => p.end()));
		}
	});

	it("writes fail soft: a failed write is kept, reported, and replayed by retry()", async () => {
		const url = await server.freshDatabase();
		const events: string[] = [];
		const store = (await PostgresDatabase.connect(url, dir, "n1")).sessions;
		await lease(url, "n1", 600);
		store.attach({ writeFailed: () => events.push("failed"), writable: () => events.push("writable") });
		store.restore();
		await store.settled();
		const admin = new pg.Client({ connectionString: url });
		await admin.connect();
		try {
			await admin.query("ALTER TABLE sessions RENAME TO sessions_away");
			store.save(record("s", true, "2026-01-01T00:00:00.000Z"));
			await store.settled();
			expect(events).toEqual(["failed"]);
			expect(store.save(record("s", true, "2026-01-01T00:00:00.000Z"))).toBe(false);
			await store.settled();
			await admin.query("ALTER TABLE sessions_away RENAME TO sessions");
			store.retry();
			await store.settled();
			expect(events.at(-1)).toBe("writable");
			expect(store.writable).toBe(true);
			const { rows } = await admin.query("SELECT id FROM sessions");
			expect(rows).toEqual([{ id: "s" }]);
		} finally {
			await admin.end();
			await store.close();
		}
	});

	it("keeps a copy of pi's session file, writes it back where it was, and forgets it with the session", async () => {
		const url = await server.freshDatabase();
		const file = join(dir, "pi-sessions", "f1", "2026_abc.jsonl");
		mkdirSync(dirname(file), { recursive: true });
		writeFileSync(file, '{"type":"session"}\n{"type":"message"}\n');
		const store = (await PostgresDatabase.connect(url, dir, "n1")).sessions;
		await lease(url, "n1", 600);
		store.restore();
		store.save(record("c", true, "2026-01-01T00:00:00.000Z"));
		store.saveConversation("c", file);
		await store.settled();
		rmSync(join(dir, "pi-sessions"), { recursive: true });
		expect(await store.restoreConversation("c", file)).toBe(true);
		expect(readFileSync(file, "utf8")).toBe('{"type":"session"}\n{"type":"message"}\n');
		expect(await store.restoreConversation("unknown", join(dir, "x.jsonl"))).toBe(false);
		store.remove("c");
		expect(await store.restoreConversation("c", file)).toBe(false);
		await store.close();
	});

	it("fails to connect with a clear message that hides the password", async () => {
		const url = new URL(await server.freshDatabase());
		url.password = "secret-word";
		url.port = "1"; // nothing listens there
		await expect(PostgresDatabase.connect(url.toString(), dir, "n1")).rejects.toThrow(
			/Cannot use the database postgres:\/\/postgres:\*\*\*@/,
		);
	});

	it("claims: a session no live node holds is taken, one a live node holds is named, a released one is taken clean", async () => {
		const url = await server.freshDatabase();
		const a = (await PostgresDatabase.connect(url, join(dir, "a"), "a")).sessions;
		const b = (await PostgresDatabase.connect(url, join(dir, "b"), "b")).sessions;
		await lease(url, "a", 600);
		await lease(url, "b", 600);
		try {
			a.save(record("s", true, "2026-01-01T00:00:00.000Z"));
			await a.settled();
			expect(await b.claim("s")).toEqual({ kind: "owned", node: "a", url: "http://a.invalid" });
			expect(await b.claim("nope")).toEqual({ kind: "absent", gone: undefined });
			// a dies: its lease runs out, and b takes the session; a did not release it, so it is not clean.
			await lease(url, "a", -1);
			const taken = await b.claim("s");
			expect(taken).toMatchObject({ kind: "claimed", clean: false, row: { id: "s" } });
			expect(await query(url, "SELECT owner, epoch FROM sessions")).toEqual([{ owner: "b", epoch: "1" }]);
			// b gives it up with its last state: the next claim is clean.
			b.release({ ...record("s", true, "2026-01-01T00:00:00.000Z"), lastSeq: 99 });
			await b.settled();
			expect(await query(url, "SELECT owner FROM sessions")).toEqual([{ owner: null }]);
			await lease(url, "a", 600);
			const back = await a.claim("s");
			expect(back).toMatchObject({ kind: "claimed", clean: true });
			expect(JSON.parse((back as { row: { record: string } }).row.record).lastSeq).toBe(99);
		} finally {
			await a.close();
			await b.close();
		}
	});

	it("fences writes: a node whose lease ran out, or whose session moved, changes nothing and hears lost", async () => {
		const url = await server.freshDatabase();
		const lost: string[] = [];
		const a = (await PostgresDatabase.connect(url, join(dir, "a"), "a")).sessions.attach({
			lost: (id) => lost.push(id),
		});
		const b = (await PostgresDatabase.connect(url, join(dir, "b"), "b")).sessions;
		await lease(url, "a", 600);
		await lease(url, "b", 600);
		try {
			a.save(record("s", true, "2026-01-01T00:00:00.000Z"));
			await a.settled();
			// a is paused past its lease; b takes the session over and writes its own state.
			await lease(url, "a", -1);
			expect(await b.claim("s")).toMatchObject({ kind: "claimed" });
			b.save({ ...record("s", true, "2026-01-01T00:00:00.000Z"), lastSeq: 7 });
			await b.settled();
			// a wakes up and writes: refused, and told. Even with a fresh lease the row is b's.
			a.save({ ...record("s", true, "2026-01-01T00:00:00.000Z"), lastSeq: 1000 });
			await a.settled();
			await lease(url, "a", 600);
			a.save({ ...record("s", true, "2026-01-01T00:00:00.000Z"), lastSeq: 2000 });
			await a.settled();
			a.remove("s");
			a.saveConversation("s", join(dir, "nothing-here.jsonl"));
			await a.settled();
			expect(lost).toEqual(["s", "s"]);
			const rows = await query(url, "SELECT owner, record FROM sessions");
			expect(rows).toHaveLength(1);
			expect(rows[0]?.owner).toBe("b");
			expect(JSON.parse(rows[0]?.record as string).lastSeq).toBe(7);
		} finally {
			await a.close();
			await b.close();
		}
	});
});
