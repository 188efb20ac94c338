import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway } from "../../src/app/server.ts";
import { createKey } from "../../src/http/auth/keys.ts";
import { noPool, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";

// Real pi with the shipped permission gate: rules answer dialogs with nobody watching.
const gate = resolve(import.meta.dirname, "../../extensions/permission-gate.ts");
const policiesDoc = readFileSync(resolve(import.meta.dirname, "../../docs/policies.md"), "utf8");
let gw: TestGateway;
let policyDir: string;
/** A key with sessions:read and sessions:write only: it may start sessions, not answer dialogs. */
let writer: string;

beforeAll(async () => {
	policyDir = mkdtempSync(join(tmpdir(), "pi-gateway-policies-"));
	const file = join(policyDir, "policies.yaml");
	writeFileSync(
		file,
		[
			"rules:",
			// The operator's say comes first: nothing in ./guarded is answered by a rule.
			"  - name: guarded-ask",
			"    match:",
			'      title: "Allow this bash command\\\\?\\\\s+rm -rf \\\\./guarded"',
			"    action: ask",
			"  - name: build-ok",
			"    match:",
			'      title: "Allow this bash command\\\\?\\\\s+rm -rf \\\\./build"',
			"    action: allow",
			"",
		].join("\n"),
	);
	const keysFile = join(policyDir, "keys.json");
	writer = createKey(keysFile, "bob", ["sessions:read", "sessions:write"]).secret;
	gw = await startTestGateway({ ...noPool, extensions: { gate }, approvalPoliciesFile: file, keysFile });
});
afterAll(async () => {
	await gw?.stop();
	rmSync(policyDir, { recursive: true, force: true });
});

/** Makes the folder `name` in the session's own folder (README's layout: <root>/<id>), where its bash runs. */
const dir = async (id: string, name: string) => {
	const path = join(await gw.folder(id), name);
	mkdirSync(path, { recursive: true });
	return path;
};
const approvals = async (id: string, status: string) =>
	(await gw.api(`/v1/sessions/${id}/approvals?status=${status}`)).body.approvals;
const run = (id: string, message: string, wait = true) =>
	gw.api(`/v1/sessions/${id}/prompt${wait ? "?wait=true" : ""}`, { method: "POST", json: { message } });

describe("approval policies", () => {
	it("a gateway rule answers a matching dialog with no person and leaves the others pending", async () => {
		const id = await gw.session({ extensions: ["gate"] });
		const build = await dir(id, "build");
		const done = await run(id, "bash: rm -rf ./build");
		expect(done.status).toBe(200);
		expect(existsSync(build)).toBe(false);
		expect(await approvals(id, "answered")).toEqual([
			expect.objectContaining({ status: "answered", answer: { value: "Allow" }, resolvedBy: "policy:build-ok" }),
		]);

		const other = await dir(id, "other");
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
		await dir(id, "other");
		expect((await run(id, "bash: rm -rf ./other")).status).toBe(200);
		expect(existsSync(other)).toBe(false);
		const resolvedBy = (await approvals(id, "answered")).map((a: { resolvedBy: string }) => a.resolvedBy);
		expect(resolvedBy).toEqual(["policy:build-ok", "admin", expect.stringMatching(/^policy:remembered-/)]);
	});

	it("the operator's rules come first: a session's allow-everything rule cannot undo the operator's ask", async () => {
		const id = await gw.session({
			extensions: ["gate"],
			policies: { rules: [{ name: "yes-to-all", match: {}, action: "allow" }] },
		});
		const guarded = await dir(id, "guarded");
		expect((await run(id, "bash: rm -rf ./guarded", false)).status).toBe(202);
		const pending = await until(async () => (await approvals(id, "pending"))[0]);
		expect(pending).toMatchObject({ status: "pending", resolvedBy: null });
		expect(existsSync(guarded)).toBe(true);
		await gw.api(`/v1/sessions/${id}/approvals/${pending.id}`, { method: "POST", json: { value: "Block" } });
		await until(async () => (await gw.api(`/v1/sessions/${id}`)).body.status === "idle");
		expect(existsSync(guarded)).toBe(true);

		// Below the operator's rules, the session's still decide (here: deny before the operator's allow).
		const strict = await gw.session({
			extensions: ["gate"],
			policies: { rules: [{ name: "no-rm", match: { method: ["select"], title: "(?s).*rm .*" }, action: "deny" }] },
		});
		const kept = await dir(strict, "kept");
		expect((await run(strict, "bash: rm -rf ./kept")).status).toBe(200);
		expect(existsSync(kept)).toBe(true);
		expect(await approvals(strict, "answered")).toEqual([
			expect.objectContaining({ answer: { value: "Block" }, resolvedBy: "policy:no-rm" }),
		]);
	});

	it("an unanswered dialog is denied after afterMs", async () => {
		const patient = await gw.session({
			extensions: ["gate"],
			policies: { unanswered: { afterMs: 200, action: "deny" } },
		});
		const kept = await dir(patient, "kept");
		expect((await run(patient, "bash: rm -rf ./kept")).status).toBe(200);
		expect(existsSync(kept)).toBe(true);
		expect(await approvals(patient, "answered")).toEqual([
			expect.objectContaining({ answer: { value: "Block" }, resolvedBy: "policy:unanswered" }),
		]);
	});

	it("the docs' example rule matches the whole title: a second command chained before it stays pending", async () => {
		const body = /--json '(\{[^']*"policies"[^']*\})'/.exec(policiesDoc)?.[1];
		const { policies } = JSON.parse(body as string);
		const id = await gw.session({ extensions: ["gate"], policies });
		const victim = await dir(id, "victim2");
		await dir(id, "scratch");
		expect((await run(id, "bash: rm -rf ./victim2; rm -rf ./scratch", false)).status).toBe(202);
		const pending = await until(async () => (await approvals(id, "pending"))[0]);
		expect(pending).toMatchObject({ status: "pending", resolvedBy: null });
		expect(existsSync(victim)).toBe(true);
		await gw.api(`/v1/sessions/${id}/approvals/${pending.id}`, { method: "POST", json: { value: "Block" } });
		await until(async () => (await gw.api(`/v1/sessions/${id}`)).body.status === "idle");
		expect(existsSync(victim)).toBe(true);
		// The command it names is still allowed, by the docs' rule.
		const scratch = await dir(id, "scratch");
		expect((await run(id, "bash: rm -rf ./scratch")).status).toBe(200);
		expect(existsSync(scratch)).toBe(false);
		expect((await approvals(id, "answered")).map((a: { resolvedBy: string }) => a.resolvedBy)).toEqual([
			"admin",
			"policy:scratch-ok",
		]);
	});

	it("a principal without approvals:answer cannot approve through a session policy (403), only deny or ask", async () => {
		const as = { authorization: `Bearer ${writer}` };
		for (const action of ["allow", { value: "Allow" }]) {
			const refused = await gw.api("/v1/sessions", {
				method: "POST",
				headers: as,
				json: { extensions: ["gate"], policies: { rules: [{ name: "yes", match: {}, action }] } },
			});
			expect(refused.status, JSON.stringify(action)).toBe(403);
			expect(refused.res.headers.get("content-type")).toContain("application/problem+json");
			expect(refused.body).toMatchObject({ status: 403, code: "insufficient_scope" });
			expect(refused.body.detail).toContain("approvals:answer");
		}
		const created = await gw.api("/v1/sessions", {
			method: "POST",
			headers: as,
			json: {
				policies: {
					rules: [
						{ name: "no", match: {}, action: "deny" },
						{ name: "hm", match: {}, action: "ask" },
					],
				},
			},
		});
		expect(created.status).toBe(201);
		expect((await gw.api(`/v1/sessions/${created.body.id}`, { method: "DELETE", headers: as })).status).toBe(204);
	});

	it("accepts RE2 syntax only, and refuses (400, naming RE2) what the linear engine cannot run or would run too long", async () => {
		// Nested quantifiers are harmless in a linear-time engine: accepted.
		for (const title of ["(a+)+$", "(x|y)*z", String.raw`\w*\w*\w*\w*!`, "(.*a){20}"]) {
			const accepted = await gw.api("/v1/sessions", {
				method: "POST",
				json: { policies: { rules: [{ name: "ok", match: { title }, action: "deny" }] } },
			});
			expect(accepted.status, title).toBe(201);
			await gw.api(`/v1/sessions/${accepted.body.id}`, { method: "DELETE" });
		}
		for (const title of ["(?=a)", "(a)\\1", "(?<=a)b", "\\u0041", "a{1001}", String.raw`[\s\S]{1000}x`]) {
			const refused = await gw.api("/v1/sessions", {
				method: "POST",
				json: { policies: { rules: [{ name: "bad", match: { title }, action: "deny" }] } },
			});
			expect(refused.status, title).toBe(400);
			expect(refused.res.headers.get("content-type")).toContain("application/problem+json");
			expect(JSON.stringify(refused.body), title).toMatch(/RE2/);
		}
	});

	it("refuses to start on an operator's file with a pattern the engine refuses, naming the file and the rule", async () => {
		const bad = join(policyDir, "bad.yaml");
		writeFileSync(
			bad,
			[
				"rules:",
				"  - name: broken",
				"    match:",
				String.raw`      title: '[\s\S]{1000}x'`,
				"    action: deny",
				"",
			].join("\n"),
		);
		const start = startGateway({
			host: "127.0.0.1",
			port: 0,
			dataDir: join(policyDir, "data"),
			logLevel: "silent",
			approvalPoliciesFile: bad,
		});
		await expect(start).rejects.toThrow(
			new RegExp(`${bad.replaceAll(".", "\\.")}.*rules\\.0\\.match\\.title.*RE2`, "s"),
		);
	});
});
