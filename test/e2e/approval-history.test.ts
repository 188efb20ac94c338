import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { ConfigInput } from "../../src/config/config.ts";
import { noPool, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";

const gate = resolve(import.meta.dirname, "../../extensions/permission-gate.ts");
const root = mkdtempSync(join(tmpdir(), "pi-gateway-history-"));
for (const dir of ["workspace", "agent"]) mkdirSync(join(root, dir));
const dirs: Partial<ConfigInput> = {
	workspaceRoot: join(root, "workspace"),
	dataDir: join(root, "data"),
	piAgentDir: join(root, "agent"),
	extensions: { gate },
};
const open = new Set<TestGateway>();
afterAll(async () => {
	for (const g of open) await g.stop();
	rmSync(root, { recursive: true, force: true });
});

describe("approval history", () => {
	it("lists resolved approvals by status with who, when and what, also after a gateway restart", async () => {
		const gw = await startTestGateway({ ...noPool, ...dirs });
		open.add(gw);
		const id = await gw.session({ extensions: ["gate"] });
		for (const [n, answer] of [
			[1, { value: "Block", by: "alice" }],
			[2, { cancelled: true, by: "bob" }],
		] as const) {
			mkdirSync(join(root, "workspace", `d${n}`));
			const run = gw.api(`/v1/sessions/${id}/prompt?wait=true`, {
				method: "POST",
				json: { message: `bash: rm -rf ./d${n}` },
			});
			const pending = await until(async () => (await gw.api("/v1/approvals?status=pending")).body.approvals[0]);
			expect(
				(await gw.api(`/v1/sessions/${id}/approvals/${pending.id}`, { method: "POST", json: answer })).status,
			).toBe(200);
			expect((await run).status).toBe(200);
		}
		await gw.close();
		open.delete(gw);

		const again = await startTestGateway({ ...noPool, ...dirs });
		open.add(again);
		// The restored session's own list starts empty; the history holds what happened.
		expect((await again.api(`/v1/sessions/${id}/approvals`)).body.approvals).toEqual([]);
		const answered = await again.api("/v1/approvals/history?status=answered");
		expect(answered.status).toBe(200);
		expect(answered.body).toEqual({
			approvals: [
				expect.objectContaining({
					sessionId: id,
					status: "answered",
					answer: { value: "Block" },
					resolvedBy: "admin",
					note: "alice",
					resolvedAt: expect.any(String),
					title: expect.stringContaining("rm -rf ./d1"),
				}),
			],
			nextCursor: null,
		});
		const all = await again.api(`/v1/approvals/history?sessionId=${id}&limit=1`);
		expect(all.body.approvals).toEqual([
			expect.objectContaining({ status: "cancelled", resolvedBy: "admin", note: "bob" }),
		]);
		const older = await again.api(`/v1/approvals/history?sessionId=${id}&limit=1&cursor=${all.body.nextCursor}`);
		expect(older.body).toEqual({
			approvals: [expect.objectContaining({ resolvedBy: "admin", note: "alice" })],
			nextCursor: null,
		});
	});
});
