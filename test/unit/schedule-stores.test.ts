import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ScheduleStore, StoredSchedule } from "../../src/schedules/store.ts";
import { PostgresSchedules } from "../../src/store/postgres/schedules.ts";
import { migrate } from "../../src/store/postgres/schema.ts";
import { loadSqlite } from "../../src/store/sqlite/driver.ts";
import { SqliteScheduleStore } from "../../src/store/sqlite/schedules.ts";
import { registryTables } from "../../src/store/sqlite/schema.ts";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.ts";

/**
 * Both schedule stores against the same expectations: caps per session and principal, a tick
 * claimed by exactly one of many callers at once (on PostgreSQL: from separate pools, as two nodes
 * would), the ticks kept, and a session's schedules going with its row.
 */
let server: TestPostgres;
let dir: string;
const pools: pg.Pool[] = [];
beforeAll(async () => {
	server = await startTestPostgres();
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-schedule-stores-"));
});
afterAll(async () => {
	await Promise.all(pools.map((p) => p.end()));
	await server?.stop();
	rmSync(dir, { recursive: true, force: true });
});

const schedule = (
	id: string,
	sessionId: string,
	principal: string,
	nextRunAt: number | null = 1000,
): StoredSchedule => ({
	id,
	sessionId,
	principal,
	message: "echo: hi",
	intervalSeconds: 60,
	cron: null,
	timezone: null,
	enabled: nextRunAt !== null,
	missed: "run-once",
	whenBusy: "skip",
	nextRunAt,
	createdAt: new Date(0).toISOString(),
	updatedAt: new Date(0).toISOString(),
});

interface Backend {
	/** Stores over the same data, as that many nodes would hold (one for SQLite: one node, one file). */
	stores(n: number): Promise<ScheduleStore[]>;
	addSession(id: string): Promise<void>;
	dropSession(id: string): Promise<void>;
	/** A node whose lease runs (cluster mode's `nodes` row; nothing on one node). */
	aliveNode(id: string): Promise<void>;
}

const sqlite = async (): Promise<Backend> => {
	const { DatabaseSync } = loadSqlite();
	const db = new DatabaseSync(join(dir, `${Math.random()}.db`));
	db.exec(registryTables);
	const store = new SqliteScheduleStore(db);
	return {
		stores: async (n) => Array.from({ length: n }, () => store),
		addSession: async (id) => void db.prepare("INSERT INTO sessions (id, record) VALUES (?, '{}')").run(id),
		dropSession: async (id) => void db.prepare("DELETE FROM sessions WHERE id = ?").run(id),
		aliveNode: async () => {},
	};
};

const postgres = async (): Promise<Backend> => {
	const url = await server.freshDatabase();
	const pool = () => {
		const p = new pg.Pool({ connectionString: url, max: 4 });
		p.on("error", () => {});
		pools.push(p);
		return p;
	};
	const admin = pool();
	await migrate(admin);
	return {
		stores: async (n) => Array.from({ length: n }, () => new PostgresSchedules(pool())),
		addSession: async (id) => void (await admin.query("INSERT INTO sessions (id, record) VALUES ($1, '{}')", [id])),
		dropSession: async (id) => void (await admin.query("DELETE FROM sessions WHERE id = $1", [id])),
		aliveNode: async (id) =>
			void (await admin.query(
				"INSERT INTO nodes (id, name, url, lease_until) VALUES ($1, $1, 'http://127.0.0.1:1', now() + interval '1 hour')",
				[id],
			)),
	};
};

describe.each([
	["SQLite", sqlite],
	["PostgreSQL", postgres],
])("schedule store (%s)", (_name, backend) => {
	it("caps schedules per session and per principal, whoever else holds some", async () => {
		const b = await backend();
		const [store] = (await b.stores(1)) as [ScheduleStore];
		for (const s of ["s1", "s2", "s3"]) await b.addSession(s);
		const caps = { perSession: 2, perPrincipal: 3 };
		expect(await store.create(schedule("a1", "s1", "alice"), caps)).toBeUndefined();
		expect(await store.create(schedule("a2", "s1", "alice"), caps)).toBeUndefined();
		expect(await store.create(schedule("a3", "s1", "alice"), caps)).toBe("session_full");
		expect(await store.create(schedule("a4", "s2", "alice"), caps)).toBeUndefined();
		expect(await store.create(schedule("a5", "s2", "alice"), caps)).toBe("principal_full");
		expect(await store.create(schedule("b1", "s3", "bob"), caps)).toBeUndefined();
		expect((await store.list("s1")).map((s) => s.id)).toEqual(["a1", "a2"]);
		expect(await store.get("a3")).toBeUndefined();
	});

	it("a due tick is claimed by exactly one of many callers at once; a claimed tick is pending until finished", async () => {
		const b = await backend();
		const stores = await b.stores(4);
		await b.addSession("s1");
		await stores[0]?.create(schedule("t1", "s1", "alice", 1000), { perSession: 10, perPrincipal: 10 });
		expect((await stores[0]?.due(999, 10))?.length).toBe(0);
		expect((await stores[0]?.due(1000, 10))?.map((s) => s.id)).toEqual(["t1"]);
		for (let round = 0; round < 5; round++) {
			const tickAt = 1000 + round * 60_000;
			const claims = await Promise.all(
				stores.flatMap((store, i) =>
					[0, 1].map((j) => store.claim("t1", tickAt, tickAt + 60_000, `node${i}.${j}`, "pending")),
				),
			);
			expect(claims.filter(Boolean).length, `round ${round}`).toBe(1);
		}
		expect((await stores[1]?.get("t1"))?.nextRunAt).toBe(1000 + 5 * 60_000);
		expect((await stores[1]?.pendingTick("t1", 1000))?.principal).toBe("alice");
		await stores[2]?.finish("t1", 1000, { status: "started", runId: "r1" });
		expect(await stores[1]?.pendingTick("t1", 1000)).toBeUndefined();
		expect(await stores[1]?.pendingTick("t1", 999)).toBeUndefined();
		const runs = (await stores[3]?.runs("t1", 20)) ?? [];
		expect(runs.length).toBe(5);
		expect(runs.at(-1)).toEqual({ runId: "r1", at: new Date(1000).toISOString(), status: "started", detail: null });
	});

	it("a tick left pending by a node that is gone is recorded as failed; one still being sent stays pending", async () => {
		const b = await backend();
		const [store] = (await b.stores(1)) as [ScheduleStore];
		await b.addSession("s1");
		await b.aliveNode("alive");
		await store.create(schedule("p1", "s1", "alice", 0), { perSession: 10, perPrincipal: 10 });
		expect(await store.claim("p1", 0, 1, "gone", "pending")).toBe(true);
		expect(await store.claim("p1", 1, 2, "alive", "pending")).toBe(true);
		expect(await store.abandon(new Set(["p1 1"]), "its node stopped")).toBe(1);
		const runs = await store.runs("p1", 20);
		expect(runs.map((r) => [r.at, r.status, r.detail])).toEqual([
			[new Date(1).toISOString(), "pending", null],
			[new Date(0).toISOString(), "failed", "its node stopped"],
		]);
		expect(await store.pendingTick("p1", 0)).toBeUndefined();
		expect((await store.pendingTick("p1", 1))?.id).toBe("p1");
	});

	it("keeps a schedule's 20 newest ticks; a disabled one is never due; a session's schedules go with its row", async () => {
		const b = await backend();
		const [store] = (await b.stores(1)) as [ScheduleStore];
		await b.addSession("s1");
		await b.addSession("s2");
		const caps = { perSession: 10, perPrincipal: 10 };
		await store.create(schedule("k1", "s1", "alice", 0), caps);
		await store.create(schedule("off", "s1", "alice", null), caps);
		await store.create(schedule("other", "s2", "alice", 10 ** 12), caps);
		for (let i = 0; i < 25; i++)
			expect(await store.claim("k1", i, i + 1, "n", i % 2 ? "missed" : "pending")).toBe(true);
		const runs = await store.runs("k1", 100);
		expect(runs.length).toBe(20);
		expect(runs[0]?.at).toBe(new Date(24).toISOString());
		expect((await store.due(10 ** 13, 10)).map((s) => s.id)).toEqual(["k1", "other"]);
		await b.dropSession("s1");
		expect(await store.get("k1")).toBeUndefined();
		expect(await store.get("off")).toBeUndefined();
		expect(await store.runs("k1", 100)).toEqual([]);
		expect((await store.list("s2")).map((s) => s.id)).toEqual(["other"]);
		expect(await store.remove("other")).toBe(true);
		expect(await store.remove("other")).toBe(false);
	});
});
