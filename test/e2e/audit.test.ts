import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { noPool, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.ts";

// The audit trail of a full flow on real pi: created, prompted, answered, deleted, by whom,
// from where; readable by admins only, and still there after a restart.
let gw: TestGateway | undefined;
let dir: string;
let alice: string;
let bob: string;
let server: TestPostgres | undefined;
beforeAll(() => {
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-audit-"));
	alice = createKey(join(dir, "keys.json"), "alice", [
		"sessions:read",
		"sessions:write",
		"approvals:read",
		"approvals:answer",
	]).secret;
	bob = createKey(join(dir, "keys.json"), "bob", ["sessions:read", "sessions:write"]).secret;
});
afterAll(async () => {
	await gw?.stop();
	await server?.stop();
	rmSync(dir, { recursive: true, force: true });
});

const start = () =>
	startTestGateway({
		...noPool,
		keysFile: join(dir, "keys.json"),
		dataDir: join(dir, "data"),
		workspaceRoot: join(dir, "ws"),
	});

describe("audit log", () => {
	it("records who created, prompted, answered and deleted what, and keeps it across a restart", async () => {
		mkdirSync(join(dir, "ws", "scratch"), { recursive: true });
		writeFileSync(join(dir, "ws", "scratch", "f"), "x");
		gw = await start();
		const h = { authorization: `Bearer ${alice}` };
		const id = (await gw.api("/v1/sessions", { method: "POST", headers: h, json: { extensions: ["permission-gate"] } }))
			.body.id;
		const run = gw.api(`/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			headers: h,
			json: { message: "bash: rm -rf ./scratch" },
		});
		const pending = await until(
			async () => (await gw?.api(`/v1/sessions/${id}/approvals?status=pending`, { headers: h }))?.body.approvals[0],
		);
		await gw.api(`/v1/sessions/${id}/approvals/${pending.id}`, {
			method: "POST",
			headers: h,
			json: { value: "Block" },
		});
		expect((await run).status).toBe(200);
		// A denial is recorded too (alice may not manage webhooks).
		expect((await gw.api("/v1/webhooks", { method: "POST", headers: h, json: {} })).status).toBe(403);
		expect((await gw.api(`/v1/sessions/${id}`, { method: "DELETE", headers: h })).status).toBe(204);

		// Admins only.
		expect((await gw.api("/v1/audit", { headers: h })).status).toBe(403);
		await gw.stop();
		gw = await start();
		const log = await gw.api(`/v1/audit?principal=alice`);
		expect(log.status).toBe(200);
		const flow = [...log.body.entries].reverse();
		expect(flow.map((e: { action: string; status: number }) => [e.action, e.status])).toEqual([
			["sessions.create", 201],
			// In the order they were answered: the prompt waited for the answer.
			["approvals.answer", 200],
			["sessions.prompt", 200],
			["webhooks.create", 403],
			["sessions.delete", 204],
		]);
		for (const entry of flow) {
			expect(entry).toMatchObject({ principal: "alice", from: "127.0.0.1", at: expect.any(String) });
			if (entry.action !== "webhooks.create") expect(entry.sessionId).toBe(id);
		}
		// Reads are not audited; the session filter finds the same flow.
		expect((await gw.api(`/v1/audit?sessionId=${id}`)).body.entries).toHaveLength(4);
	});
});

// Issue 41: one cap for every principal's entries, so bob's requests took alice's from 2 to 0 in the
// admin's view. A small cap (40) and the default share, a tenth of it, on one node and in cluster mode.
const stores: [string, () => Promise<string | undefined>][] = [
	["SQLite", async () => undefined],
	[
		"PostgreSQL",
		async () => {
			server = await startTestPostgres();
			return server.freshDatabase();
		},
	],
];

describe.each(stores)("audit log in fair shares (%s)", (_name, database) => {
	let shared: TestGateway;
	beforeAll(async () => {
		const databaseUrl = await database();
		const cluster = databaseUrl ? { databaseUrl, clusterSecret: "audit-fair-shares-secret-of-32-chars!" } : {};
		shared = await startTestGateway({ ...noPool, keysFile: join(dir, "keys.json"), maxAuditEntries: 40, ...cluster });
	});
	afterAll(async () => {
		await shared?.stop();
	});

	it("bob's flood of requests takes none of alice's entries; he keeps a tenth of the cap", async () => {
		const as = (secret: string) => ({ authorization: `Bearer ${secret}` });
		const id = (await shared.api("/v1/sessions", { method: "POST", headers: as(alice), json: {} })).body.id;
		expect((await shared.api(`/v1/sessions/${id}`, { method: "DELETE", headers: as(alice) })).status).toBe(204);
		for (let i = 0; i < 250; i++) {
			const denied = await shared.api("/v1/sessions/ses_none/prompt", {
				method: "POST",
				headers: as(bob),
				json: { message: "hi" },
			});
			expect(denied.status).toBe(404);
		}
		const hers = (await shared.api("/v1/audit?principal=alice")).body.entries;
		expect(hers.map((e: { action: string }) => e.action)).toEqual(["sessions.delete", "sessions.create"]);
		const his = (await shared.api("/v1/audit?principal=bob&limit=100")).body.entries;
		expect(his).toHaveLength(4);
		expect((await shared.api("/v1/audit?limit=100")).body.entries.length).toBeLessThanOrEqual(40);
	});
});
