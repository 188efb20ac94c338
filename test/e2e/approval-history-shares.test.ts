import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConfigInput } from "../../src/config/config.ts";
import { createKey } from "../../src/http/auth/keys.ts";
import { startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";

// Issue 41 item 2: approval history had one cap for everyone, so bob's sessions' many resolved
// dialogs evicted alice's (GET /v1/approvals/history). Real pi with the permission gate, README's
// layout, alice and bob from a keys file, small caps: 8 in all, 3 per principal. Bob's session
// denies its dialogs by its own rule, so his flood needs nobody to answer.
const gate = resolve(import.meta.dirname, "../../extensions/permission-gate.ts");
let root: string;
let keysFile: string;
let alice: string;
let bob: string;
let options: Partial<ConfigInput>;
const open = new Set<TestGateway>();
beforeAll(() => {
	root = mkdtempSync(join(tmpdir(), "pi-gateway-history-shares-"));
	mkdirSync(join(root, "agent"));
	keysFile = join(root, "keys.json");
	alice = createKey(keysFile, "alice", [
		"sessions:read",
		"sessions:write",
		"approvals:read",
		"approvals:answer",
	]).secret;
	bob = createKey(keysFile, "bob", ["sessions:read", "sessions:write"]).secret;
	options = {
		keysFile,
		dataDir: join(root, "data"),
		piAgentDir: join(root, "agent"),
		extensions: { gate },
		maxApprovalHistory: 8,
		maxApprovalHistoryPerPrincipal: 3,
	};
});
afterAll(async () => {
	for (const gw of open) await gw.stop();
	rmSync(root, { recursive: true, force: true });
});

const as = (secret: string) => ({ authorization: `Bearer ${secret}` });

describe("approval history in fair shares", () => {
	it("bob's flood of resolved dialogs keeps his own newest three; alice's history stays, across a restart too", async () => {
		const gw = await startTestGateway(options);
		open.add(gw);
		const created = await gw.api("/v1/sessions", {
			method: "POST",
			json: { extensions: ["gate"] },
			headers: as(alice),
		});
		expect(created.status).toBe(201);
		const hers = created.body.id as string;
		const run = gw.api(`/v1/sessions/${hers}/prompt?wait=true`, {
			method: "POST",
			json: { message: "bash: rm -rf ./mine" },
			headers: as(alice),
		});
		const pending = await until(
			async () => (await gw.api("/v1/approvals?status=pending", { headers: as(alice) })).body.approvals[0],
		);
		const answer = { method: "POST", json: { value: "Block" }, headers: as(alice) };
		expect((await gw.api(`/v1/sessions/${hers}/approvals/${pending.id}`, answer)).status).toBe(200);
		expect((await run).status).toBe(200);

		const denyAll = { rules: [{ name: "no", match: { method: ["select"] }, action: "deny" }] };
		const his = await gw.api("/v1/sessions", {
			method: "POST",
			json: { extensions: ["gate"], policies: denyAll },
			headers: as(bob),
		});
		expect(his.status).toBe(201);
		for (let i = 0; i < 10; i++) {
			const done = await gw.api(`/v1/sessions/${his.body.id}/prompt?wait=true`, {
				method: "POST",
				json: { message: `bash: rm -rf ./x${i}` },
				headers: as(bob),
			});
			expect(done.status).toBe(200);
		}
		const titles = async (g: TestGateway, sessionId: string) =>
			(await g.api(`/v1/approvals/history?sessionId=${sessionId}`)).body.approvals.map((a: { title: string }) =>
				a.title.replace(/^[\s\S]*rm -rf \.\//, ""),
			);
		// His share: his newest three (the admin reads every principal's history).
		await until(async () => (await titles(gw, his.body.id)).length === 3);
		expect(await titles(gw, his.body.id)).toEqual(["x9", "x8", "x7"]);
		const herHistory = async (g: TestGateway) =>
			(await g.api("/v1/approvals/history", { headers: as(alice) })).body.approvals;
		expect(await herHistory(gw)).toEqual([
			expect.objectContaining({ sessionId: hers, status: "answered", answer: { value: "Block" }, resolvedBy: "alice" }),
		]);
		await gw.close();
		open.delete(gw);

		// A restart prunes by age only: what each principal holds stays.
		const again = await startTestGateway(options);
		open.add(again);
		expect(await herHistory(again)).toEqual([expect.objectContaining({ sessionId: hers, resolvedBy: "alice" })]);
		expect(await titles(again, his.body.id)).toEqual(["x9", "x8", "x7"]);
	});
});
