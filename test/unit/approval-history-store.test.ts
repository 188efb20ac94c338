import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import { ConfigSchema, shareOf } from "../../src/config/config.ts";
import type { Approval } from "../../src/sessions/dialogs/approvals.ts";
import { SqliteAccessStore } from "../../src/store/sqlite/access.ts";
import { SqliteApprovalHistory } from "../../src/store/sqlite/approval-history.ts";

const week = 7 * 24 * 3600_000;

/** A resolved approval of `sessionId`. */
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

/** A gateway.db where alice owns session `a`, bob `b1` and `b2`, carol `c` and dave `d`. */
function database(): DatabaseSync {
	const db = new DatabaseSync(":memory:");
	const access = new SqliteAccessStore(db);
	const owners = { a: "alice", b1: "bob", b2: "bob", c: "carol", d: "dave" };
	for (const [sessionId, owner] of Object.entries(owners)) access.save({ sessionId, owner, grants: [] });
	return db;
}

const held = (db: DatabaseSync) =>
	Object.fromEntries(
		(
			db.prepare("SELECT principal, count(*) AS n FROM approval_history GROUP BY principal").all() as {
				principal: string;
				n: number;
			}[]
		).map((r) => [r.principal, r.n]),
	);

const ids = async (history: SqliteApprovalHistory, sessionId?: string) =>
	(await history.page({ sessionId }, 1000)).records.map((a) => `${a.sessionId}/${a.id}`);

describe("SqliteApprovalHistory", () => {
	// Issue 41: one cap for everyone, so bob's sessions' many resolved dialogs evicted alice's history.
	it("fair shares: bob's sessions' flood evicts only his own oldest; alice's history stays", async () => {
		const db = database();
		const history = new SqliteApprovalHistory(db, week, 10, 4);
		history.add(approval("a", "hers"), new Date().toISOString());
		for (let i = 0; i < 250; i++) history.add(approval(i % 2 ? "b1" : "b2", `x${i}`), new Date().toISOString());
		expect(await ids(history, "a")).toEqual(["a/hers"]);
		// Bob (both his sessions together) keeps his share, his newest four.
		expect(held(db)).toEqual({ alice: 1, bob: 4 });
		expect(await ids(history)).toEqual(["b1/x249", "b2/x248", "b1/x247", "b2/x246", "a/hers"]);
	});

	it("past the cap the principal that holds the most gives up its oldest, never one that holds less", () => {
		const db = database();
		const history = new SqliteApprovalHistory(db, week, 10, 4);
		history.add(approval("a", "a1"), new Date().toISOString());
		history.add(approval("a", "a2"), new Date().toISOString());
		for (const session of ["b1", "c", "d"])
			for (let i = 0; i < 8; i++) history.add(approval(session, `${session}${i}`), new Date().toISOString());
		const counts = held(db);
		expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(10);
		expect(counts.alice).toBe(2);
		const others = [counts.bob ?? 0, counts.carol ?? 0, counts.dave ?? 0];
		expect(Math.max(...others) - Math.min(...others)).toBeLessThanOrEqual(1);
	});

	it("an approval answered again replaces its row and is counted once; a session without an owner counts as the admin's", () => {
		const db = database();
		const history = new SqliteApprovalHistory(db, week, 100, 10);
		history.add(approval("a", "same"), new Date().toISOString());
		history.add({ ...approval("a", "same"), status: "cancelled" }, new Date().toISOString());
		history.add(approval("gone", "x"), new Date().toISOString());
		expect(held(db)).toEqual({ alice: 1, admin: 1 });
		expect(
			db.prepare("SELECT principal, n FROM fair_counts WHERE store = 'approval_history' ORDER BY principal").all(),
		).toEqual([
			{ principal: "admin", n: 1 },
			{ principal: "alice", n: 1 },
		]);
		expect(history.ownerOf("b1")).toBe("bob");
		expect(history.ownerOf("gone")).toBe("admin");
	});

	it("by default a principal's share is a tenth of the cap", () => {
		const defaults = ConfigSchema.parse({});
		expect(shareOf(defaults.maxApprovalHistory, defaults.maxApprovalHistoryPerPrincipal)).toBe(10_000);
		const db = database();
		const history = new SqliteApprovalHistory(db, week, 100);
		for (let i = 0; i < 50; i++) history.add(approval("b1", `x${i}`), new Date().toISOString());
		expect(held(db)).toEqual({ bob: 10 });
	});

	it("a gateway.db from before: its rows stay, in place, given the owner of their session, and are counted", async () => {
		const db = database();
		db.exec(`CREATE TABLE approval_history (session_id TEXT NOT NULL, id TEXT NOT NULL, status TEXT NOT NULL,
			resolved_at TEXT NOT NULL, record TEXT NOT NULL, PRIMARY KEY (session_id, id))`);
		const insert = db.prepare("INSERT INTO approval_history VALUES (?, ?, 'answered', ?, ?)");
		const old = (sessionId: string, id: string) =>
			insert.run(sessionId, id, new Date().toISOString(), JSON.stringify(approval(sessionId, id)));
		old("a", "hers");
		for (let i = 0; i < 6; i++) old("b1", `old${i}`);
		old("gone", "unowned");
		const history = new SqliteApprovalHistory(db, week, 100, 4);
		expect(held(db)).toEqual({ alice: 1, bob: 6, admin: 1 });
		history.add(approval("b2", "new"), new Date().toISOString());
		// Bob's three oldest go for his new one; alice's older one stays.
		expect(await ids(history)).toEqual(["b2/new", "gone/unowned", "b1/old5", "b1/old4", "b1/old3", "a/hers"]);
	});

	it("approvals resolved before the window go at the next prune", async () => {
		const db = database();
		const history = new SqliteApprovalHistory(db, 60_000, 100);
		history.add(approval("a", "old"), new Date(Date.now() - 120_000).toISOString());
		history.add(approval("a", "new"), new Date().toISOString());
		history.prune();
		expect(await ids(history)).toEqual(["a/new"]);
		expect(held(db)).toEqual({ alice: 1 });
	});
});
