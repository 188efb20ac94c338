import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConfigInput } from "../../src/config/config.ts";
import { createKey } from "../../src/http/auth/keys.ts";
import { noPool, startTestGateway, type TestGateway } from "../helpers/gateway.ts";

// A session owns its pi session files (issue 20, "A session can be pointed at another principal's
// conversation"): bob cannot switch, parent or resume onto alice's file, not even across a gateway
// restart, and no answer tells him her session exists. Real pi, demo model, alice and bob as keys.
let root: string;
let dirs: Partial<ConfigInput>;
const key = { alice: "", bob: "" };
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
/** `<folder>/<file>` of a session file: reached from a sibling folder with `..`. */
const theirs = (file: string) => join(basename(dirname(file)), basename(file));
const as = (who: keyof typeof key) => ({ authorization: `Bearer ${key[who]}` });

beforeAll(() => {
	root = mkdtempSync(join(tmpdir(), "pi-gateway-files-"));
	for (const dir of ["workspace", "agent"]) mkdirSync(join(root, dir));
	const keysFile = join(root, "keys.json");
	const full = ["sessions:read", "sessions:write", "approvals:read", "approvals:answer"] as const;
	key.alice = createKey(keysFile, "alice", [...full]).secret;
	key.bob = createKey(keysFile, "bob", [...full]).secret;
	dirs = {
		workspaceRoot: join(root, "workspace"),
		piAgentDir: join(root, "agent"),
		keysFile,
	};
});
afterAll(async () => {
	for (const gw of [...open]) await gw.stop();
	rmSync(root, { recursive: true, force: true });
});

/** A session of `who` with one settled run, so pi has written its file. */
async function sessionOf(gw: TestGateway, who: keyof typeof key, message: string) {
	const created = await gw.api("/v1/sessions", { method: "POST", headers: as(who), json: { name: who } });
	expect(created.status).toBe(201);
	const id = created.body.id as string;
	const run = await gw.api(`/v1/sessions/${id}/prompt?wait=true`, {
		method: "POST",
		headers: as(who),
		json: { message: `echo: ${message}` },
	});
	expect(run.status).toBe(200);
	const view = (await gw.api(`/v1/sessions/${id}`, { headers: as(who) })).body;
	return { id, file: view.piSessionFile as string, piId: view.piSessionId as string };
}

describe("a session's pi session files are its own", () => {
	// Sandbox off is where bob read her file at once; the gateway's refusal must not depend on it.
	it.each(["off", "auto"] as const)(
		"bob cannot point his session at alice's file (switch, raw switch_session, parentSession), before or after a restart (sandbox %s)",
		async (sandbox) => {
			const dataDir = join(root, `data-restart-${sandbox}`);
			const first = await gateway({ dataDir, sandbox });
			const alice = await sessionOf(first, "alice", "alice's secret");
			const bob = await sessionOf(first, "bob", "bob's own");
			const hers = readFileSync(alice.file, "utf8");
			expect(dirname(bob.file)).not.toBe(dirname(alice.file));

			const attempts = [
				[`/v1/sessions/${bob.id}/switch`, { sessionPath: alice.file }],
				[`/v1/sessions/${bob.id}/rpc`, { type: "switch_session", sessionPath: alice.file }],
				[`/v1/sessions/${bob.id}/new`, { parentSession: alice.file }],
				[`/v1/sessions/${bob.id}/rpc`, { type: "new_session", parentSession: alice.file }],
				// A file that does not exist is refused the same way: no probing for her files.
				[`/v1/sessions/${bob.id}/switch`, { sessionPath: join(dirname(alice.file), "nope.jsonl") }],
				[`/v1/sessions/${bob.id}/switch`, { sessionPath: join(dirname(bob.file), "..", theirs(alice.file)) }],
			] as const;
			for (const [path, json] of attempts) {
				const refused = await first.api(path, { method: "POST", headers: as("bob"), json });
				expect([refused.status, refused.body.code], `${path} ${JSON.stringify(json)}`).toEqual([
					403,
					"session_file_not_own",
				]);
				expect(JSON.stringify(refused.body)).not.toContain(alice.id);
			}
			const state = (await first.api(`/v1/sessions/${bob.id}/state`, { headers: as("bob") })).body;
			expect(state.sessionFile).toBe(bob.file);

			// The gateway restarts: each session comes back on its own file, in its own folder.
			await stop(first);
			const second = await gateway({ dataDir, sandbox });
			const resumed = await second.api(`/v1/sessions/${bob.id}/resume`, { method: "POST", headers: as("bob") });
			expect(resumed.status).toBe(200);
			expect(resumed.body.piSessionFile).toBe(bob.file);
			const messages = (await second.api(`/v1/sessions/${bob.id}/messages`, { headers: as("bob") })).body.messages;
			expect(JSON.stringify(messages)).toContain("bob's own");
			expect(JSON.stringify(messages)).not.toContain("alice's secret");
			const again = await second.api(`/v1/sessions/${alice.id}/resume`, { method: "POST", headers: as("alice") });
			expect(again.body.piSessionFile).toBe(alice.file);
			expect(readFileSync(alice.file, "utf8")).toBe(hers);
			await stop(second);
		},
	);

	it("a record that names an older session's file (written before this rule held) does not start on it", async () => {
		const dataDir = join(root, "data-legacy");
		const first = await gateway({ dataDir });
		const alice = await sessionOf(first, "alice", "alice's secret");
		const bob = await sessionOf(first, "bob", "bob's own");
		// What the old gateway recorded after bob's switch: his session on her file.
		const poisoned = first.registry.get(bob.id);
		poisoned.piState = { ...poisoned.piState, sessionFile: alice.file, sessionId: alice.piId };
		await stop(first);
		const second = await gateway({ dataDir });
		const refused = await second.api(`/v1/sessions/${bob.id}/resume`, { method: "POST", headers: as("bob") });
		expect([refused.status, refused.body.code]).toEqual([409, "session_file_in_use"]);
		expect(JSON.stringify(refused.body)).not.toContain(alice.id);
		const hers = await second.api(`/v1/sessions/${alice.id}/resume`, { method: "POST", headers: as("alice") });
		expect([hers.status, hers.body.piSessionFile]).toEqual([200, alice.file]);
		await stop(second);
	});

	it("a switch within its own folder still works (a file from its own clone)", async () => {
		const gw = await gateway({ dataDir: join(root, "data-clone") });
		const bob = await sessionOf(gw, "bob", "before the clone");
		expect((await gw.api(`/v1/sessions/${bob.id}/clone`, { method: "POST", headers: as("bob") })).status).toBe(200);
		const cloned = (await gw.api(`/v1/sessions/${bob.id}/state`, { headers: as("bob") })).body.sessionFile;
		expect(dirname(cloned)).toBe(dirname(bob.file));
		const back = await gw.api(`/v1/sessions/${bob.id}/switch`, {
			method: "POST",
			headers: as("bob"),
			json: { sessionPath: bob.file },
		});
		expect([back.status, back.body]).toEqual([200, { cancelled: false }]);
		await stop(gw);
	});

	it("resume by pi id finds only sessions the caller may see: 404 for alice's, held or left behind", async () => {
		const gw = await gateway({ dataDir: join(root, "data-resume") });
		const alice = await sessionOf(gw, "alice", "hers again");
		const before = gw.registry.size;
		for (const resume of [alice.piId, alice.piId.slice(0, 8)]) {
			const refused = await gw.api("/v1/sessions", { method: "POST", headers: as("bob"), json: { resume } });
			expect([refused.status, refused.body.code]).toEqual([404, "pi_session_not_found"]);
			expect(JSON.stringify(refused.body)).not.toContain(alice.id);
		}
		// Her own: 409 naming her session, as before.
		const own = await gw.api("/v1/sessions", { method: "POST", headers: as("alice"), json: { resume: alice.piId } });
		expect([own.status, own.body.code]).toEqual([409, "session_file_in_use"]);
		expect(own.body.detail).toContain(alice.id);
		// Deleted: the file stays on disk, held by no session; only an admin may continue it.
		expect((await gw.api(`/v1/sessions/${alice.id}`, { method: "DELETE", headers: as("alice") })).status).toBe(204);
		for (const who of ["bob", "alice"] as const) {
			const orphan = await gw.api("/v1/sessions", { method: "POST", headers: as(who), json: { resume: alice.piId } });
			expect([orphan.status, orphan.body.code], who).toEqual([404, "pi_session_not_found"]);
		}
		expect(gw.registry.size).toBe(before - 1);
		const admin = await gw.api("/v1/sessions", { method: "POST", json: { resume: alice.piId } });
		expect(admin.status).toBe(201);
		expect(admin.body.piSessionFile).toBe(alice.file);
		await stop(gw);
	});
});

describe("the default folder", () => {
	it("without --workspace-root, a session without cwd works in <data-dir>/workspaces/<session id>, never the gateway's own directory", async () => {
		const gw = await gateway({ workspaceRoot: undefined, keysFile: undefined, dataDir: join(root, "data-default") });
		const workspaces = join(root, "data-default", "workspaces");
		expect(gw.config.workspaceRoot).toBe(workspaces);
		const ids = [await gw.session(), await gw.session()];
		for (const id of ids) {
			const view = (await gw.api(`/v1/sessions/${id}`)).body;
			expect(view.cwd).toBe(join(realpathSync(workspaces), id));
			const pwd = await gw.api(`/v1/sessions/${id}/bash`, { method: "POST", json: { command: "pwd" } });
			expect(pwd.body.output.trim()).toBe(join(realpathSync(workspaces), id));
			expect(pwd.body.output.trim()).not.toBe(process.cwd());
		}
		// An explicit cwd inside the root still works.
		mkdirSync(join(workspaces, "shared"));
		const explicit = await gw.api("/v1/sessions", { method: "POST", json: { cwd: "shared" } });
		expect([explicit.status, explicit.body.cwd]).toEqual([201, join(realpathSync(workspaces), "shared")]);
		await stop(gw);
	});
});
