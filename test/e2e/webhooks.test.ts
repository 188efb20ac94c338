import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Webhook } from "standardwebhooks";
import { afterAll, describe, expect, it } from "vitest";
import type { ConfigInput } from "../../src/config/config.ts";
import { fixtures, noPool, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { type Received, startReceiver } from "../helpers/receiver.ts";

const gate = resolve(import.meta.dirname, "../../extensions/permission-gate.ts");
const cleanup: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
	for (const step of cleanup.reverse()) await step();
});

/** Checks a delivery's signature with the standardwebhooks package, as a receiver would. */
function verified(secret: string, r: Received) {
	return new Webhook(secret).verify(r.body, {
		"webhook-id": String(r.headers["webhook-id"]),
		"webhook-timestamp": String(r.headers["webhook-timestamp"]),
		"webhook-signature": String(r.headers["webhook-signature"]),
	});
}

async function subscribe(gw: TestGateway, json: Record<string, unknown>) {
	const created = await gw.api("/v1/webhooks", { method: "POST", json });
	expect(created.status).toBe(201);
	return created.body as { id: string; secret: string };
}

describe("webhooks", () => {
	it("deliver a signed approval.requested; an answer through the API brings approval.resolved and run.settled", async () => {
		const receiver = await startReceiver();
		cleanup.push(receiver.close);
		const gw = await startTestGateway({ ...noPool, extensions: { gate }, webhookAllow: ["loopback"] });
		cleanup.push(() => gw.stop());
		const hook = await subscribe(gw, {
			url: receiver.url,
			events: ["approval.requested", "approval.resolved", "run.settled"],
		});
		expect(hook.secret).toMatch(/^whsec_/);
		const listed = await gw.api("/v1/webhooks");
		expect(listed.body.webhooks).toEqual([expect.objectContaining({ id: hook.id, url: receiver.url })]);
		expect(JSON.stringify(listed.body)).not.toContain(hook.secret);

		const id = await gw.session({ extensions: ["gate"] });
		const folder = await gw.folder(id);
		mkdirSync(join(folder, "scratch"));
		writeFileSync(join(folder, "scratch", "note.txt"), "gone after the run\n");
		const run = await gw.api(`/v1/sessions/${id}/prompt`, {
			method: "POST",
			json: { message: "bash: rm -rf ./scratch" },
		});
		expect(run.status).toBe(202);

		const requested = await until(() => receiver.of("approval.requested")[0]);
		expect(verified(hook.secret, requested)).toMatchObject({ type: "approval.requested" });
		expect(requested.json.data).toEqual({
			sessionId: id,
			approvalId: expect.any(String),
			method: "select",
			status: "pending",
			links: {
				session: `/v1/sessions/${id}`,
				approval: `/v1/sessions/${id}/approvals/${requested.json.data.approvalId}`,
			},
		});
		// Thin: the dialog's text (here a shell command) stays behind the API.
		expect(requested.body).not.toContain("rm -rf");

		const answered = await gw.api(requested.json.data.links.approval, {
			method: "POST",
			json: { value: "Allow", by: "webhook-bot" },
		});
		expect(answered.status).toBe(200);

		const resolved = await until(() => receiver.of("approval.resolved")[0]);
		expect(verified(hook.secret, resolved)).toBeTruthy();
		expect(resolved.json.data).toMatchObject({
			approvalId: requested.json.data.approvalId,
			status: "answered",
			resolvedBy: "admin", // the authenticated principal; `by` is a note
		});
		const settled = await until(() => receiver.of("run.settled")[0]);
		expect(verified(hook.secret, settled)).toBeTruthy();
		expect(settled.json.data).toEqual({
			sessionId: id,
			runId: run.body.runId,
			stopReason: "stop",
			// What the run changed (the workspace's snapshot at its start against its end), paths only.
			changes: { files: [{ path: "scratch/note.txt", status: "deleted" }], truncated: false },
			links: {
				session: `/v1/sessions/${id}`,
				messages: `/v1/sessions/${id}/messages`,
				lastAssistantText: `/v1/sessions/${id}/last-assistant-text`,
				changes: `/v1/sessions/${id}/changes?runId=${run.body.runId}`,
			},
		});
		// Each message has its own webhook-id, and the delivery log shows the receiver's answers.
		const ids = receiver.received.map((r) => r.headers["webhook-id"]);
		expect(new Set(ids).size).toBe(ids.length);
		const log = await gw.api(`/v1/webhooks/${hook.id}/deliveries`);
		expect(log.status).toBe(200);
		expect(log.body.deliveries.map((d: { type: string; state: string }) => [d.type, d.state])).toEqual([
			["run.settled", "delivered"],
			["approval.resolved", "delivered"],
			["approval.requested", "delivered"],
		]);
		expect(log.body.deliveries[0].log).toEqual([
			{ at: expect.any(String), status: 204, error: null, durationMs: expect.any(Number) },
		]);

		// A manual redelivery sends the same message again under the same webhook-id.
		const again = await gw.api(`/v1/webhooks/${hook.id}/deliveries/${settled.headers["webhook-id"]}/redeliver`, {
			method: "POST",
		});
		expect(again.status).toBe(202);
		await until(() => receiver.of("run.settled").length === 2);
		expect(receiver.of("run.settled")[1]?.headers["webhook-id"]).toBe(settled.headers["webhook-id"]);

		expect((await gw.api(`/v1/webhooks/${hook.id}`, { method: "DELETE" })).status).toBe(204);
		expect((await gw.api(`/v1/webhooks/${hook.id}`)).status).toBe(404);
	});

	it("a receiver that fails 3 times then succeeds gets the delivery once, across a gateway restart", async () => {
		const receiver = await startReceiver((n) => (n < 3 ? 500 : 200));
		cleanup.push(receiver.close);
		const root = mkdtempSync(join(tmpdir(), "pi-gateway-webhooks-"));
		cleanup.push(() => rmSync(root, { recursive: true, force: true }));
		for (const dir of ["workspace", "agent"]) mkdirSync(join(root, dir));
		const dirs: Partial<ConfigInput> = {
			workspaceRoot: join(root, "workspace"),
			dataDir: join(root, "data"),
			piAgentDir: join(root, "agent"),
			webhookAllow: ["127.0.0.1"],
			webhookRetryBaseMs: 300,
		};
		const first = await startTestGateway({ ...noPool, ...dirs });
		let firstStopped = false;
		cleanup.push(() => firstStopped || first.stop());
		const hook = await subscribe(first, { url: receiver.url, events: ["run.settled"] });
		const id = await first.session();
		expect(
			(await first.api(`/v1/sessions/${id}/prompt?wait=true`, { method: "POST", json: { message: "hi" } })).status,
		).toBe(200);
		await until(() => receiver.received.length >= 1);
		await first.stop();
		firstStopped = true;
		const seenBeforeRestart = receiver.received.length;
		expect(seenBeforeRestart).toBeLessThan(4);

		const second = await startTestGateway({ ...noPool, ...dirs });
		cleanup.push(() => second.stop());
		await until(async () => {
			const { body } = await second.api(`/v1/webhooks/${hook.id}/deliveries`);
			return body.deliveries[0]?.state === "delivered";
		});
		expect(receiver.received.map((r) => r.status)).toEqual([500, 500, 500, 200]);
		expect(new Set(receiver.received.map((r) => r.headers["webhook-id"])).size).toBe(1);
		for (const r of receiver.received) expect(verified(hook.secret, r)).toMatchObject({ type: "run.settled" });
		const { body } = await second.api(`/v1/webhooks/${hook.id}/deliveries`);
		expect(body.deliveries).toHaveLength(1);
		expect(body.deliveries[0]).toMatchObject({ state: "delivered", attempts: 4, nextAttemptAt: null });
		expect(body.deliveries[0].log.map((a: { status: number }) => a.status)).toEqual([500, 500, 500, 200]);
	});

	it("send session.crashed and session.exited, filtered by session (stub pi for the crash)", async () => {
		const receiver = await startReceiver();
		cleanup.push(receiver.close);
		const gw = await startTestGateway({
			...noPool,
			piCommand: [process.execPath, join(fixtures, "stub-pi.mjs"), "ok"],
			webhookAllow: ["loopback"],
		});
		cleanup.push(() => gw.stop());
		const crashing = await gw.session({ name: "crash" });
		const quiet = await gw.session({ name: "quiet" });
		const other = await gw.session({ name: "other" });
		const hook = await subscribe(gw, {
			url: receiver.url,
			events: ["session.crashed", "session.exited"],
			sessions: [crashing, quiet],
		});
		await gw.api(`/v1/sessions/${crashing}/prompt`, { method: "POST", json: { message: "hi" } });
		const crashed = await until(() => receiver.of("session.crashed")[0]);
		expect(verified(hook.secret, crashed)).toBeTruthy();
		expect(crashed.json.data).toMatchObject({ sessionId: crashing, reason: "crashed", signal: "SIGKILL" });
		expect((await gw.api(`/v1/sessions/${other}`, { method: "DELETE" })).status).toBe(204);
		expect((await gw.api(`/v1/sessions/${quiet}`, { method: "DELETE" })).status).toBe(204);
		const exited = await until(() => receiver.of("session.exited")[0]);
		expect(exited.json.data).toMatchObject({ sessionId: quiet, links: { session: `/v1/sessions/${quiet}` } });
		expect(receiver.received.map((r) => r.json.data.sessionId)).toEqual([crashing, quiet]);
	});

	it("refuse metadata, link-local and (unless allowed) loopback destinations", async () => {
		const gw = await startTestGateway(noPool);
		cleanup.push(() => gw.stop());
		for (const url of [
			"http://169.254.169.254/latest/meta-data",
			"http://[fe80::1]/",
			"http://100.100.100.200/",
			"http://[::ffff:169.254.169.254]/",
			"http://127.0.0.1:9/",
			"http://localhost:9/",
		]) {
			const refused = await gw.api("/v1/webhooks", { method: "POST", json: { url, events: ["run.settled"] } });
			expect(refused.status, url).toBe(422);
			expect(refused.body.code).toBe("webhook_destination_refused");
		}
		const bad = await gw.api("/v1/webhooks", {
			method: "POST",
			json: { url: "file:///etc/passwd", events: ["run.settled"] },
		});
		expect(bad.status).toBe(400);
	});

	it("load static webhooks from --webhooks-file; they cannot be deleted through the API", async () => {
		const dir = mkdtempSync(join(tmpdir(), "pi-gateway-whfile-"));
		cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
		const file = join(dir, "webhooks.json");
		const secret = `whsec_${Buffer.alloc(32, 7).toString("base64")}`;
		writeFileSync(
			file,
			JSON.stringify([{ id: "ops", url: "https://hooks.example.com/pi", events: ["session.crashed"], secret }]),
		);
		const gw = await startTestGateway({ ...noPool, webhooksFile: file });
		cleanup.push(() => gw.stop());
		const { body } = await gw.api("/v1/webhooks/ops");
		expect(body).toMatchObject({ id: "ops", static: true, events: ["session.crashed"] });
		expect((await gw.api("/v1/webhooks/ops", { method: "DELETE" })).status).toBe(409);
	});
});
