import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";

// Real pi with the shipped permission gate: rules answer dialogs with nobody watching.
const gate = resolve(import.meta.dirname, "../../extensions/permission-gate.ts");
let gw: TestGateway;
let policyDir: string;

beforeAll(async () => {
	policyDir = mkdtempSync(join(tmpdir(), "pi-gateway-policies-"));
	const file = join(policyDir, "policies.yaml");
	writeFileSync(
		file,
		[
			"rules:",
			"  - name: scratch-ok",
			"    match:",
			'      title: "rm -rf \\\\./scratch$"',
			"    action: allow",
			"",
		].join("\n"),
	);
	gw = await startTestGateway({ extensions: { gate }, approvalPoliciesFile: file });
});
afterAll(async () => {
	await gw?.stop();
	rmSync(policyDir, { recursive: true, force: true });
});

const dir = (name: string) => {
	mkdirSync(join(gw.workspace, name), { recursive: true });
	return join(gw.workspace, name);
};
const approvals = async (id: string, status: string) =>
	(await gw.api(`/v1/sessions/${id}/approvals?status=${status}`)).body.approvals;
const run = (id: string, message: string, wait = true) =>
	gw.api(`/v1/sessions/${id}/prompt${wait ? "?wait=true" : ""}`, { method: "POST", json: { message } });

describe("approval policies", () => {
	it("a gateway rule answers a matching dialog with no person and leaves the others pending", async () => {
		const id = await gw.session({ extensions: ["gate"] });
		const scratch = dir("scratch");
		const done = await run(id, "bash: rm -rf ./scratch");
		expect(done.status).toBe(200);
		expect(existsSync(scratch)).toBe(false);
		expect(await approvals(id, "answered")).toEqual([
			expect.objectContaining({ status: "answered", answer: { value: "Allow" }, resolvedBy: "policy:scratch-ok" }),
		]);

		const other = dir("other");
		expect((await run(id, "bash: rm -rf ./other", false)).status).toBe(202);
		const pending = await until(async () => (await approvals(id, "pending"))[0]);
		expect(pending).toMatchObject({ status: "pending", resolvedBy: null, title: expect.stringContaining("./other") });
		expect((await gw.api(`/v1/sessions/${id}`)).body.status).toBe("waiting");

		// "Allow always for this session": the next identical dialog is answered by the remembered rule.
		const answered = await gw.api(`/v1/sessions/${id}/approvals/${pending.id}`, {
			method: "POST",
			json: { value: "Allow", by: "alice", remember: "session" },
		});
		expect(answered.body).toMatchObject({ status: "answered", resolvedBy: "admin", note: "alice" });
		await until(async () => (await gw.api(`/v1/sessions/${id}`)).body.status === "idle");
		expect(existsSync(other)).toBe(false);
		dir("other");
		expect((await run(id, "bash: rm -rf ./other")).status).toBe(200);
		expect(existsSync(other)).toBe(false);
		const resolvedBy = (await approvals(id, "answered")).map((a: { resolvedBy: string }) => a.resolvedBy);
		expect(resolvedBy).toEqual(["policy:scratch-ok", "admin", expect.stringMatching(/^policy:remembered-/)]);
	});

	it("session rules come before the gateway's, and an unanswered dialog is denied after afterMs", async () => {
		const strict = await gw.session({
			extensions: ["gate"],
			policies: { rules: [{ name: "no-rm", match: { method: ["select"], title: "rm " }, action: "deny" }] },
		});
		const scratch = dir("scratch");
		expect((await run(strict, "bash: rm -rf ./scratch")).status).toBe(200);
		expect(existsSync(scratch)).toBe(true);
		expect(await approvals(strict, "answered")).toEqual([
			expect.objectContaining({ answer: { value: "Block" }, resolvedBy: "policy:no-rm" }),
		]);

		const patient = await gw.session({
			extensions: ["gate"],
			policies: { unanswered: { afterMs: 200, action: "deny" } },
		});
		dir("kept");
		expect((await run(patient, "bash: rm -rf ./kept")).status).toBe(200);
		expect(existsSync(join(gw.workspace, "kept"))).toBe(true);
		expect(await approvals(patient, "answered")).toEqual([
			expect.objectContaining({ answer: { value: "Block" }, resolvedBy: "policy:unanswered" }),
		]);
	});

	it("refuses patterns that could backtrack without bound", async () => {
		for (const title of ["(a+)+$", "(x|y)*z", "(?=a)", "(a)\\1"]) {
			const refused = await gw.api("/v1/sessions", {
				method: "POST",
				json: { policies: { rules: [{ name: "bad", match: { title }, action: "allow" }] } },
			});
			expect(refused.status, title).toBe(400);
		}
	});
});
