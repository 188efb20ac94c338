import { mkdtempSync, readdirSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { fixtures, startTestGateway, type TestGateway } from "../helpers/gateway.ts";

// POST /v1/sessions/{id}/fork-session's bounds (issue 44 item 4): the folder's copy is refused past
// --workspace-max-fork-bytes before anything is made, and the new session counts against the
// caller's sessions like a create. A stub pi: nothing here needs a model.
let gw: TestGateway;
let dir: string;
let alice = "";
const headers = () => ({ authorization: `Bearer ${alice}` });
const cap = 4096;

beforeAll(async () => {
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-fork-limits-"));
	const keysFile = join(dir, "keys.json");
	alice = createKey(keysFile, "alice", ["sessions:read", "sessions:write"]).secret;
	gw = await startTestGateway({
		keysFile,
		piCommand: [process.execPath, join(fixtures, "stub-pi.mjs"), "ok"],
		maxSessionsPerPrincipal: 3,
		workspaceMaxForkBytes: cap,
	});
});
afterAll(async () => {
	await gw?.stop();
	rmSync(dir, { recursive: true, force: true });
});

const create = (json: unknown = {}) => gw.api("/v1/sessions", { method: "POST", headers: headers(), json });
const fork = (id: string, json: unknown = {}) =>
	gw.api(`/v1/sessions/${id}/fork-session`, { method: "POST", headers: headers(), json });
const made = () => ({
	sessions: readdirSync(join(gw.workspace, "@alice")).sort(),
	files: readdirSync(join(gw.config.dataDir, "pi-sessions")).length,
});

describe("fork-session's bounds", () => {
	let original = "";

	it("a folder over --workspace-max-fork-bytes is 413 folder_too_large, and nothing is made", async () => {
		const created = await create();
		expect(created.status).toBe(201);
		original = created.body.id;
		const big = join(created.body.cwd, "big.bin");
		writeFileSync(big, Buffer.alloc(cap + 1));
		const before = made();
		const refused = await fork(original);
		expect(refused.status).toBe(413);
		expect(refused.res.headers.get("content-type")).toBe("application/problem+json");
		expect(refused.body.code).toBe("folder_too_large");
		expect(refused.body.detail).toContain("--workspace-max-fork-bytes");
		expect(made()).toEqual(before);
		unlinkSync(big);
		writeFileSync(join(created.body.cwd, "fits.bin"), Buffer.alloc(cap));
	});

	it("a session that keeps no pi session file is 409 conversation_not_kept", async () => {
		const ephemeral = await create({ persist: false });
		expect(ephemeral.status).toBe(201);
		const refused = await fork(ephemeral.body.id);
		expect([refused.status, refused.body.code]).toEqual([409, "conversation_not_kept"]);
	});

	it("a conversation pi has not written yet forks empty; an entry of it is 404 entry_not_found", async () => {
		const missing = await fork(original, { entryId: "a1b2c3d4" });
		expect([missing.status, missing.body.code]).toEqual([404, "entry_not_found"]);
		const forked = await fork(original);
		expect(forked.status).toBe(201);
		expect(forked.body.folderCopy).toMatchObject({ files: 1, bytes: cap, skipped: 0 });
		expect(readdirSync(forked.body.cwd)).toEqual(["fits.bin"]);
	});

	it("counts against the caller's sessions like a create: 429 at --max-sessions-per-principal", async () => {
		const listed = await gw.api("/v1/sessions", { headers: headers() });
		expect(listed.body.sessions).toHaveLength(3);
		const before = made();
		const refused = await fork(original);
		expect([refused.status, refused.body.code]).toEqual([429, "too_many_sessions"]);
		expect(made()).toEqual(before);
	});
});
