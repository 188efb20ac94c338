import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { gatewayEntry } from "../helpers/gateway-entry.ts";

// Principals from --keys-file, as a team meets them: keys made with the CLI, each with its
// scopes, checked on every request against real pi; the token stays the admin.
const repo = resolve(import.meta.dirname, "../..");
const run = promisify(execFile);
const keysCreate = (args: string[]) => run(process.execPath, [gatewayEntry, "keys", "create", ...args], { cwd: repo });

let gw: TestGateway;
let dir: string;
let keysFile: string;
let alice: string;
let approver: string;
beforeAll(async () => {
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-keys-"));
	keysFile = join(dir, "keys.json");
	alice = (
		await keysCreate(["--principal", "alice", "--scopes", "sessions:read,sessions:write", "--keys-file", keysFile])
	).stdout.trim();
	approver = (
		await keysCreate(["--principal", "carol", "--scopes", "approvals:read,approvals:answer", "--keys-file", keysFile])
	).stdout.trim();
	gw = await startTestGateway({ keysFile });
});
afterAll(async () => {
	await gw?.stop();
	rmSync(dir, { recursive: true, force: true });
});

const as = (key: string) => ({ authorization: `Bearer ${key}` });

describe("keys create", () => {
	it("prints the secret once and keeps only its hash, in a file only the owner reads", async () => {
		const text = readFileSync(keysFile, "utf8");
		expect(alice).toMatch(/^pgk_[\w-]{43}$/);
		expect(text).not.toContain(alice);
		const keys = JSON.parse(text).keys;
		expect(keys.map((k: { principal: string }) => k.principal)).toEqual(["alice", "carol"]);
		expect(keys[0]).toMatchObject({
			scopes: ["sessions:read", "sessions:write"],
			hash: expect.stringMatching(/^sha256:/),
		});
		expect(statSync(keysFile).mode & 0o077).toBe(0);
	});

	it("refuses a scope that does not exist", async () => {
		const failed = await keysCreate(["--principal", "x", "--scopes", "root", "--keys-file", keysFile]).catch((e) => e);
		expect(failed.code).toBe(2);
		expect(failed.stderr).toContain("--scopes");
	});
});

describe("scopes", () => {
	it("a key with sessions:write creates and prompts a session; admin routes answer it 403", async () => {
		const created = await gw.api("/v1/sessions", { method: "POST", headers: as(alice), json: {} });
		expect(created.status).toBe(201);
		const id = created.body.id as string;
		const run = await gw.api(`/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			headers: as(alice),
			json: { message: "hello from alice" },
		});
		expect(run.status).toBe(200);
		const webhooks = await gw.api("/v1/webhooks", { headers: as(alice) });
		expect(webhooks.status).toBe(403);
		expect(webhooks.res.headers.get("content-type")).toContain("application/problem+json");
		expect(webhooks.body).toMatchObject({ code: "insufficient_scope", detail: expect.stringContaining("admin") });
		// The token is still the admin.
		expect((await gw.api("/v1/webhooks")).status).toBe(200);
	});

	it("an approver reads the inbox but cannot prompt", async () => {
		const id = await gw.session();
		expect((await gw.api("/v1/approvals", { headers: as(approver) })).status).toBe(200);
		const prompt = await gw.api(`/v1/sessions/${id}/prompt`, {
			method: "POST",
			headers: as(approver),
			json: { message: "not yours to send" },
		});
		expect(prompt.status).toBe(403);
		expect(prompt.body.code).toBe("insufficient_scope");
	});

	it("an unknown or expired key is a 401", async () => {
		expect((await gw.api("/v1/sessions", { headers: as("pgk_not-a-key") })).status).toBe(401);
		const expired = createKey(keysFile, "dave", ["sessions:read"], new Date(Date.now() - 1000)).secret;
		const fresh = createKey(keysFile, "erin", ["sessions:read"]).secret;
		// The change is picked up without a restart; the expired one never works.
		await until(async () => (await gw.fetch("/v1/sessions", { headers: as(fresh) })).status === 200);
		expect((await gw.api("/v1/sessions", { headers: as(expired) })).status).toBe(401);
	});

	it("a keys file that became invalid keeps the keys loaded before", async () => {
		const before = readFileSync(keysFile, "utf8");
		writeFileSync(keysFile, "{ not json");
		gw.keys?.reload();
		expect((await gw.api("/v1/sessions", { headers: as(alice) })).status).toBe(200);
		writeFileSync(keysFile, before);
	});
});
