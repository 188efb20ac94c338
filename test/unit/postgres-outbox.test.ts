import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate } from "../../src/store/postgres/schema.ts";
import { PostgresOutbox } from "../../src/store/postgres/webhook-outbox.ts";
import type { Delivery } from "../../src/webhooks/schemas.ts";
import { lease as leaseIn, startTestPostgres, type TestPostgres } from "../helpers/postgres.ts";

/**
 * The cluster's record of undelivered webhook messages (cluster mode): who holds what, adoption of
 * a gone node's messages (once, by one node), and that a node cannot take back what was adopted.
 */
let server: TestPostgres;
let pool: pg.Pool;
beforeAll(async () => {
	server = await startTestPostgres();
	url = await server.freshDatabase();
	pool = new pg.Pool({ connectionString: url, max: 4 });
	// As the gateway's pool does: a connection the server ends (its fast shutdown after the tests,
	// which can reach a client before pool.end() has closed it) is no test failure.
	pool.on("error", () => {});
	await migrate(pool);
});
afterAll(async () => {
	await pool?.end();
	await server?.stop();
});

let url: string;
const lease = (node: string, seconds: number) => leaseIn(url, node, seconds);

const delivery = (id: string, webhookId = "wh_1"): Delivery => ({
	id,
	webhookId,
	type: "run.settled",
	state: "pending",
	attempts: 1,
	nextAttemptAt: "2026-11-30T12:00:00.000Z",
	createdAt: "2026-11-30T11:00:00.000Z",
	payload: { type: "run.settled", data: { sessionId: "s1" } },
	log: [{ at: "2026-11-30T11:00:01.000Z", status: 503, error: null, durationMs: 3 }],
});

describe("PostgresOutbox", () => {
	it("a gone node's messages are adopted once, by one live node, as they were; the gone node cannot take them back", async () => {
		await lease("a", 60);
		await lease("b", 60);
		await lease("gone", -1);
		const [a, b, gone] = ["a", "b", "gone"].map((n) => new PostgresOutbox(pool, n)) as PostgresOutbox[];
		const held = ["m1", "m2", "m3", "m4"].map((id) => delivery(id));
		await gone?.hold([...held, delivery("m5", "wh_static_of_gone")]);
		expect(await a?.holder({ webhookId: "wh_1", id: "m1" })).toBe("elsewhere");
		expect(await gone?.holder({ webhookId: "wh_1", id: "m1" })).toBe("mine");
		expect(await a?.holder({ webhookId: "wh_1", id: "never" })).toBe("unknown");

		// Both live nodes look at once: every message goes to exactly one of them.
		const [toA, toB] = await Promise.all([a?.adoptOrphans(["wh_1"]), b?.adoptOrphans(["wh_1"])]);
		const adopted = [...(toA ?? []), ...(toB ?? [])];
		expect(adopted.map((d) => d.id).sort()).toEqual(["m1", "m2", "m3", "m4"]);
		expect(adopted.find((d) => d.id === "m1")).toEqual(held[0]);
		// A webhook neither knows (another node's --webhooks-file) stays where it was.
		expect(await a?.adoptOrphans(["wh_1"])).toEqual([]);
		expect(await gone?.holder({ webhookId: "wh_static_of_gone", id: "m5" })).toBe("mine");

		// The gone node, back, writes its stale copy: the adopter keeps it.
		const m1Holder = toA?.some((d) => d.id === "m1") ? a : b;
		await gone?.hold([{ ...delivery("m1"), attempts: 7 }]);
		await gone?.settle([{ webhookId: "wh_1", id: "m1" }]);
		expect(await gone?.holder({ webhookId: "wh_1", id: "m1" })).toBe("elsewhere");
		expect(await m1Holder?.holder({ webhookId: "wh_1", id: "m1" })).toBe("mine");
		const { rows } = await pool.query("SELECT state, attempts FROM webhook_outbox WHERE id = 'm1'");
		expect(rows).toEqual([{ state: "pending", attempts: 1 }]);
	});

	it("a node without a live lease adopts nothing; a released message goes to the next live node", async () => {
		await lease("stopping", 60);
		await lease("late", -1);
		await lease("next", 60);
		const [stopping, late, next] = ["stopping", "late", "next"].map(
			(n) => new PostgresOutbox(pool, n),
		) as PostgresOutbox[];
		await stopping?.hold([delivery("r1", "wh_2")]);
		await stopping?.release();
		expect(await late?.adoptOrphans(["wh_2"])).toEqual([]);
		expect((await next?.adoptOrphans(["wh_2"]))?.map((d) => d.id)).toEqual(["r1"]);
		expect(await stopping?.holder({ webhookId: "wh_2", id: "r1" })).toBe("elsewhere");
		// Settled: a tombstone that still names its holder, and nothing to adopt.
		await next?.settle([{ webhookId: "wh_2", id: "r1" }]);
		await lease("next", -1);
		await lease("stopping", 60);
		expect(await stopping?.adoptOrphans(["wh_2"])).toEqual([]);
		expect(await stopping?.holder({ webhookId: "wh_2", id: "r1" })).toBe("elsewhere");
		// Redelivered by its holder (a manual redelivery): pending again with its payload, adoptable whole.
		await next?.hold([{ ...delivery("r1", "wh_2"), attempts: 0 }]);
		expect((await stopping?.adoptOrphans(["wh_2"]))?.[0]).toEqual({ ...delivery("r1", "wh_2"), attempts: 0 });
	});

	// Issue 41: an adopted message must count in its own principal's share of the adopter's outbox.
	it("an adopted message names the principal that owns its session, read from the cluster's owners when first held", async () => {
		await lease("holder", 60);
		await lease("adopter", 60);
		await pool.query("INSERT INTO session_access (session_id, owner, grants) VALUES ('s_alice', 'alice', '[]')");
		const [holder, adopter] = ["holder", "adopter"].map((n) => new PostgresOutbox(pool, n)) as PostgresOutbox[];
		const hers = { ...delivery("p1", "wh_3"), payload: { type: "run.settled", data: { sessionId: "s_alice" } } };
		await holder?.hold([hers, delivery("p2", "wh_3")]);
		// Her session is gone by the time the holder is (its owner's record with it): the message still says whose it was.
		await pool.query("DELETE FROM session_access WHERE session_id = 's_alice'");
		await lease("holder", -1);
		const adopted = (await adopter?.adoptOrphans(["wh_3"])) ?? [];
		expect(adopted.find((d) => d.id === "p1")).toEqual({ ...hers, principal: "alice" });
		expect(adopted.find((d) => d.id === "p2")).not.toHaveProperty("principal");
	});
});
