import pg from "pg";
import type { Logger } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClusterNotice } from "../../src/cluster/notifications.ts";
import { PostgresNotices } from "../../src/store/postgres/notifications.ts";
import { until } from "../helpers/gateway.ts";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.ts";

/**
 * The cluster's notices (the NoticeChannel src/cluster declares) over LISTEN/NOTIFY, as two nodes
 * use them: every node hears every notice, its own too; an unreadable one is logged and skipped;
 * a listener whose connection is cut listens again by itself; a closed one hears nothing.
 */
let server: TestPostgres;
let url: string;
let pool: pg.Pool;
const warned: string[] = [];
const logger = { warn: (_fields: unknown, message: string) => warned.push(message) } as unknown as Logger;
beforeAll(async () => {
	server = await startTestPostgres();
	url = await server.freshDatabase();
	pool = new pg.Pool({ connectionString: url, max: 2 });
	pool.on("error", () => {});
});
afterAll(async () => {
	await pool?.end();
	await server?.stop();
});

async function node(): Promise<{ notices: PostgresNotices; heard: ClusterNotice[] }> {
	const heard: ClusterNotice[] = [];
	const notices = new PostgresNotices(url, pool, logger);
	await notices.listen((notice) => heard.push(notice));
	return { notices, heard };
}

describe("PostgresNotices", () => {
	it("carries each node's notices to every node, skips an unreadable one, listens again after a cut, and stops at close", async () => {
		const a = await node();
		const b = await node();
		try {
			a.notices.send({ type: "approvals", node: "a" });
			await until(() => a.heard.length === 1 && b.heard.length === 1);
			expect(b.heard).toEqual([{ type: "approvals", node: "a" }]);
			expect(a.heard).toEqual(b.heard);

			await pool.query("SELECT pg_notify('pi_gateway', 'not json')");
			await until(() => warned.filter((m) => m === "cluster: unreadable notice").length === 2);
			b.notices.send({ type: "webhooks", node: "b" });
			await until(() => a.heard.length === 2);
			expect(a.heard[1]).toEqual({ type: "webhooks", node: "b" });

			// The server ends both listening connections: each connects and listens again.
			const { rowCount } = await pool.query(
				"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'LISTEN pi_gateway'",
			);
			expect(rowCount).toBe(2);
			let sent = 0;
			await until(() => {
				a.notices.send({ type: "approvals", node: `again-${sent++}` });
				return b.heard.some((n) => n.node.startsWith("again-"));
			});
		} finally {
			await a.notices.close();
		}
		const before = a.heard.length;
		b.notices.send({ type: "approvals", node: "b" });
		await until(() => b.heard.at(-1)?.node === "b");
		expect(a.heard).toHaveLength(before);
		await b.notices.close();
		await b.notices.close();
		await until(async () => {
			const { rows } = await pool.query("SELECT 1 FROM pg_stat_activity WHERE query = 'LISTEN pi_gateway'");
			return rows.length === 0;
		});
	});
});
