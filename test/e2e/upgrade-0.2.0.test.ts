import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadSqlite } from "../../src/store/sqlite/driver.ts";
import { migrations } from "../../src/store/sqlite/migrations.ts";
import { fixtures, startTestGateway, type TestGateway } from "../helpers/gateway.ts";

// Upgrades keep data (issue 47 item 5): a data dir written by pi-gateway 0.2.0
// (test/fixtures/upgrade-0.2.0/, made by its make.sh from the commit that set that version) opens with
// this version: alice's session (its conversation and folder) and the admin's gated one, alice's API
// key, the webhook and its deliveries, the answered approval and the audit log are all there, the
// sessions go on, and gateway.db records the changes it went through (`migrations`, with this
// version). Schedules came after 0.2.0: a 0.2.0 data dir has none to keep, and takes new ones.
//
// Records hold absolute paths (a session's cwd, its pi session file), so the copy goes back where
// 0.2.0 wrote it: /tmp/pi-gateway-upgrade-0.2.0.
const fixture = join(fixtures, "upgrade-0.2.0");
const made = JSON.parse(readFileSync(join(fixture, "made.json"), "utf8")) as {
	aliceSecret: string;
	aliceSession: string;
	gatedSession: string;
	approval: string;
	webhook: string;
};
const home = "/tmp/pi-gateway-upgrade-0.2.0";
const dataDir = join(home, "data");
const version = (
	JSON.parse(readFileSync(resolve(import.meta.dirname, "../../package.json"), "utf8")) as { version: string }
).version;
let gw: TestGateway | undefined;
let closed = false;

beforeAll(async () => {
	rmSync(home, { recursive: true, force: true });
	mkdirSync(join(home, "agent"), { recursive: true });
	execFileSync("tar", ["-C", home, "-xzf", join(fixture, "data.tar.gz")]);
	gw = await startTestGateway({ dataDir, piAgentDir: join(home, "agent"), webhookAllow: ["loopback"] });
}, 120_000);

afterAll(async () => {
	if (!closed) await gw?.close();
	if (gw) rmSync(gw.root, { recursive: true, force: true });
	rmSync(home, { recursive: true, force: true });
});

const asAlice = { authorization: `Bearer ${made.aliceSecret}` };
const texts = (messages: { role: string; content: unknown }[]) =>
	messages.flatMap((m) =>
		Array.isArray(m.content)
			? m.content
					.filter((c: { type: string }) => c.type === "text")
					.map((c: { text: string }) => `${m.role}: ${c.text}`)
			: [`${m.role}: ${String(m.content)}`],
	);

describe("a data dir written by 0.2.0", () => {
	it("keeps alice's key and session: its conversation, its folder, and it goes on", async () => {
		const g = gw as TestGateway;
		const view = await g.api(`/v1/sessions/${made.aliceSession}`, { headers: asAlice });
		expect(view.status, JSON.stringify(view.body)).toBe(200);
		expect(view.body).toMatchObject({
			name: "alice-before-upgrade",
			cwd: `${dataDir}/workspaces/@alice/${made.aliceSession}`,
		});
		const before = await g.api(`/v1/sessions/${made.aliceSession}/messages`, { headers: asAlice });
		expect(texts(before.body.messages)).toEqual(
			expect.arrayContaining(["user: echo: written by 0.2.0", "assistant: written by 0.2.0"]),
		);
		const file = await g.fetch(`/v1/sessions/${made.aliceSession}/files/content?path=notes.txt`, { headers: asAlice });
		expect(await file.text()).toBe("kept\n");
		const more = await g.api(`/v1/sessions/${made.aliceSession}/prompt?wait=60`, {
			method: "POST",
			headers: asAlice,
			json: { message: "echo: after the upgrade" },
		});
		expect([more.status, more.body.text], JSON.stringify(more.body)).toEqual([200, "after the upgrade"]);
		// Schedules came after 0.2.0: the upgraded data dir takes one on alice's session, hers.
		const schedule = await g.api(`/v1/sessions/${made.aliceSession}/schedules`, {
			method: "POST",
			headers: asAlice,
			json: { message: "echo: every hour", intervalSeconds: 3600 },
		});
		expect(schedule.status, JSON.stringify(schedule.body)).toBe(201);
		const listed = await g.api(`/v1/sessions/${made.aliceSession}/schedules`, { headers: asAlice });
		expect(listed.body.schedules.map((x: { id: string }) => x.id)).toEqual([schedule.body.id]);
		// The admin's session is not alice's to see.
		expect((await g.api(`/v1/sessions/${made.gatedSession}`, { headers: asAlice })).status).toBe(404);
	});

	it("keeps the admin's gated session, the answered approval, the webhook with its deliveries and the audit log", async () => {
		const g = gw as TestGateway;
		const gated = await g.api(`/v1/sessions/${made.gatedSession}`);
		expect(gated.body).toMatchObject({ name: "gated-before-upgrade", status: "stopped", resumable: true });
		const history = await g.api(`/v1/approvals/history?sessionId=${made.gatedSession}`);
		expect(history.status).toBe(200);
		expect(history.body.approvals.map((a: { id: string; status: string }) => [a.id, a.status])).toEqual([
			[made.approval, "answered"],
		]);
		const hooks = await g.api("/v1/webhooks");
		expect(hooks.body.webhooks.map((w: { id: string }) => w.id)).toEqual([made.webhook]);
		const deliveries = await g.api(`/v1/webhooks/${made.webhook}/deliveries`);
		const kept = deliveries.body.deliveries.filter((d: { state: string }) => d.state === "delivered");
		expect(kept.map((d: { type: string }) => d.type).sort()).toEqual(
			expect.arrayContaining(["approval.resolved", "run.settled"]),
		);
		const audit = await g.api("/v1/audit?limit=100");
		const actions = audit.body.entries.map((e: { principal: string; action: string }) => `${e.principal} ${e.action}`);
		expect(actions).toEqual(
			expect.arrayContaining(["admin webhooks.create", "alice sessions.create", "admin approvals.answer"]),
		);
	});

	it("records the changes gateway.db went through, with this version, and fills each row's principal", async () => {
		await gw?.close();
		closed = true;
		expect(existsSync(join(dataDir, "gateway.db"))).toBe(true);
		const db = new (loadSqlite().DatabaseSync)(join(dataDir, "gateway.db"));
		try {
			const done = migrations(db);
			expect(done.map((m) => m.name)).toEqual(
				expect.arrayContaining([
					"approval_history.principal",
					"webhook_outbox.principal",
					"fair_counts.approval_history",
					"fair_counts.audit",
				]),
			);
			for (const m of done) expect(m.gatewayVersion, m.name).toBe(version);
			// Each row counts in its session owner's share: alice's runs' deliveries are hers.
			const owners = db
				.prepare("SELECT principal, json_extract(payload, '$.data.sessionId') AS session FROM webhook_outbox")
				.all() as { principal: string; session: string }[];
			for (const row of owners)
				expect(row.principal, row.session).toBe(row.session === made.aliceSession ? "alice" : "admin");
			expect(owners.some((r) => r.principal === "alice")).toBe(true);
			// The schedule made after the upgrade is in gateway.db, with its session.
			const schedules = db.prepare("SELECT session_id, principal FROM schedules").all();
			expect(schedules.map((r) => ({ ...r }))).toEqual([{ session_id: made.aliceSession, principal: "alice" }]);
			// The gated session keeps its extensions for its next start.
			const gated = db.prepare("SELECT record FROM sessions WHERE id = ?").get(made.gatedSession) as { record: string };
			expect(JSON.parse(gated.record).options.extensions).toEqual(["permission-gate"]);
		} finally {
			db.close();
		}
	});
});
