import { execFile } from "node:child_process";
import {
	lstatSync,
	mkdirSync,
	mkdtempSync,
	readdirSync,
	readFileSync,
	readlinkSync,
	realpathSync,
	rmSync,
	symlinkSync,
	writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PiGateway } from "../../src/client/index.ts";
import { createKey } from "../../src/http/auth/keys.ts";
import { noPool, runEnded, startTestGateway, type TestGateway } from "../helpers/gateway.ts";

// Issue 44 item 4, "Fork into a new session": POST /v1/sessions/{id}/fork-session makes a new
// session (new id, the caller's) that continues the conversation up to an entry in a copy of the
// folder, and the original (its pi, its pi session file, its folder) stays as it was. Real pi with
// the demo model, README's layout, alice, bob and carol as API keys.
let gw: TestGateway;
let dir: string;
const key = { alice: "", bob: "", carol: "" };
const as = (who: keyof typeof key) => ({ authorization: `Bearer ${key[who]}` });
let original = "";
let originalFile = "";

beforeAll(async () => {
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-fork-"));
	const keysFile = join(dir, "keys.json");
	const full = ["sessions:read", "sessions:write", "approvals:read", "approvals:answer"] as const;
	for (const who of ["alice", "bob"] as const) key[who] = createKey(keysFile, who, [...full]).secret;
	key.carol = createKey(keysFile, "carol", ["approvals:read", "approvals:answer", "sessions:write"]).secret;
	gw = await startTestGateway({ ...noPool, keysFile });
	const created = await gw.api("/v1/sessions", { method: "POST", headers: as("alice"), json: { name: "original" } });
	expect(created.status).toBe(201);
	original = created.body.id;
	for (const message of ["echo: one", "echo: two"]) expect((await prompt(original, message)).status).toBe(200);
	originalFile = (await gw.api(`/v1/sessions/${original}`, { headers: as("alice") })).body.piSessionFile;
	// What the agent left in its folder: files, a folder, links that stay inside and links that lead out.
	const cwd = await gw.folder(original);
	writeFileSync(join(dir, "secret.txt"), "CANARY-outside-the-folder");
	mkdirSync(join(cwd, "src"));
	writeFileSync(join(cwd, "notes.txt"), "notes\n");
	writeFileSync(join(cwd, "src/main.ts"), "export const x = 1;\n");
	writeFileSync(join(cwd, "src/data.bin"), Buffer.from([0, 1, 2, 255]));
	symlinkSync("src/main.ts", join(cwd, "inside"));
	symlinkSync("../notes.txt", join(cwd, "src/up"));
	symlinkSync(join(dir, "secret.txt"), join(cwd, "abs"));
	symlinkSync("../../../../../../../../../../secret.txt", join(cwd, "esc"));
	symlinkSync("main.ts/../../..", join(cwd, "src/sneaky"));
});
afterAll(async () => {
	await gw?.stop();
	rmSync(dir, { recursive: true, force: true });
});

function prompt(id: string, message: string, who: keyof typeof key = "alice") {
	return gw.api(`/v1/sessions/${id}/prompt?wait=true`, { method: "POST", headers: as(who), json: { message } });
}
function fork(id: string, json: unknown = {}, who: keyof typeof key = "alice", headers: Record<string, string> = {}) {
	return gw.api(`/v1/sessions/${id}/fork-session`, { method: "POST", headers: { ...as(who), ...headers }, json });
}
/** The conversation as `role: text` lines (user and assistant messages). */
async function conversation(id: string, who: keyof typeof key = "alice"): Promise<string[]> {
	const { body } = await gw.api(`/v1/sessions/${id}/messages`, { headers: as(who) });
	return body.messages
		.filter((m: { role: string }) => m.role === "user" || m.role === "assistant")
		.map((m: { role: string; content: string | { type: string; text?: string }[] }) => {
			const text = typeof m.content === "string" ? m.content : m.content.map((c) => c.text ?? "").join("");
			return `${m.role}: ${text}`;
		});
}
/** Every entry of a folder, links as links: `path type size|target`. */
function listing(folder: string, prefix = ""): string[] {
	return readdirSync(join(folder, prefix))
		.sort()
		.flatMap((name) => {
			const path = prefix ? `${prefix}/${name}` : name;
			const stat = lstatSync(join(folder, path));
			if (stat.isSymbolicLink()) return [`${path} link ${readlinkSync(join(folder, path))}`];
			if (stat.isDirectory()) return [`${path} dir`, ...listing(folder, path)];
			return [`${path} file ${stat.size} ${stat.mtimeMs}`];
		});
}
async function aliceSessions(): Promise<number> {
	return (await gw.api("/v1/sessions", { headers: as("alice") })).body.sessions.length;
}

describe("POST /v1/sessions/{id}/fork-session", () => {
	it("makes a new session with the whole conversation and a copy of the folder; the original is untouched", async () => {
		await runEnded(gw, original);
		const cwd = await gw.folder(original);
		const fileBefore = readFileSync(originalFile);
		const folderBefore = listing(cwd);
		const stateBefore = (await gw.api(`/v1/sessions/${original}/state`, { headers: as("alice") })).body;

		const forked = await fork(original);
		expect(forked.status).toBe(201);
		const id = forked.body.id as string;
		expect(id).not.toBe(original);
		expect(forked.res.headers.get("location")).toBe(`/v1/sessions/${id}`);
		expect(forked.body.forkedFrom).toEqual({ sessionId: original, entryId: null });
		expect(forked.body.cwd).toBe(join(realpathSync(gw.workspace), "@alice", id));
		expect(dirname(forked.body.piSessionFile)).not.toBe(dirname(originalFile));
		// The earlier conversation, in a session of its own.
		const earlier = ["user: echo: one", "assistant: one", "user: echo: two", "assistant: two"];
		expect(await conversation(id)).toEqual(earlier);
		expect((await gw.api(`/v1/sessions/${id}`, { headers: as("alice") })).body.name).toBe("original");

		// The folder's files and the links that stay inside; those that lead out are not there.
		const copy = forked.body.cwd as string;
		expect(readFileSync(join(copy, "notes.txt"), "utf8")).toBe("notes\n");
		expect(readFileSync(join(copy, "src/main.ts"), "utf8")).toBe("export const x = 1;\n");
		expect(readFileSync(join(copy, "src/data.bin"))).toEqual(Buffer.from([0, 1, 2, 255]));
		expect(readlinkSync(join(copy, "inside"))).toBe("src/main.ts");
		expect(readlinkSync(join(copy, "src/up"))).toBe("../notes.txt");
		for (const gone of ["abs", "esc", "src/sneaky"]) expect(() => lstatSync(join(copy, gone)), gone).toThrow();
		expect(forked.body.folderCopy).toMatchObject({ links: 2, skipped: 3 });
		expect(forked.body.folderCopy.skippedPaths).toEqual(
			["abs", "esc", "src/sneaky"].map((path) => ({ path, why: "a link that leads out of the folder" })),
		);
		expect(forked.body.folderCopy.files).toBeGreaterThanOrEqual(3);

		// The new session runs a prompt on the earlier conversation.
		expect((await prompt(id, "echo: three")).status).toBe(200);
		expect(await conversation(id)).toEqual([...earlier, "user: echo: three", "assistant: three"]);

		// The original: the same bytes in its file, the same folder, the same pi session; it still runs.
		expect(readFileSync(originalFile).equals(fileBefore)).toBe(true);
		expect(listing(cwd)).toEqual(folderBefore);
		const stateAfter = (await gw.api(`/v1/sessions/${original}/state`, { headers: as("alice") })).body;
		expect([stateAfter.sessionFile, stateAfter.sessionId]).toEqual([stateBefore.sessionFile, stateBefore.sessionId]);
		expect((await prompt(original, "echo: four")).status).toBe(200);
		expect(await conversation(original)).toEqual([...earlier, "user: echo: four", "assistant: four"]);
	});

	it("cuts the conversation at an entry, inclusive: a user message of …/fork-messages or any entry", async () => {
		const forkable = (await gw.api(`/v1/sessions/${original}/fork-messages`, { headers: as("alice") })).body;
		const two = forkable.messages.find((m: { text: string }) => m.text === "echo: two").entryId;
		const atTwo = await fork(original, { entryId: two, name: "at two" });
		expect(atTwo.status).toBe(201);
		expect(atTwo.body.forkedFrom).toEqual({ sessionId: original, entryId: two });
		expect(await conversation(atTwo.body.id)).toEqual(["user: echo: one", "assistant: one", "user: echo: two"]);
		expect(atTwo.body.name).toBe("at two");

		const { entries } = (await gw.api(`/v1/sessions/${original}/entries`, { headers: as("alice") })).body;
		const answer = entries.find((e: { message?: { role: string } }) => e.message?.role === "assistant").id;
		const atAnswer = await fork(original, { entryId: answer });
		expect(atAnswer.status).toBe(201);
		expect(await conversation(atAnswer.body.id)).toEqual(["user: echo: one", "assistant: one"]);
		expect((await prompt(atAnswer.body.id, "echo: again")).status).toBe(200);
		expect(await conversation(atAnswer.body.id)).toEqual([
			"user: echo: one",
			"assistant: one",
			"user: echo: again",
			"assistant: again",
		]);
	});

	it("an entry the conversation does not have is 404 entry_not_found, and nothing is made", async () => {
		const sessions = await aliceSessions();
		const area = listing(join(gw.workspace, "@alice")).length;
		const files = readdirSync(join(gw.config.dataDir, "pi-sessions")).length;
		const missing = await fork(original, { entryId: "deadbeef" });
		expect(missing.status).toBe(404);
		expect(missing.body.code).toBe("entry_not_found");
		expect((await fork(original, { entryId: "../../x" })).status).toBe(400);
		expect(await aliceSessions()).toBe(sessions);
		expect(listing(join(gw.workspace, "@alice")).length).toBe(area);
		expect(readdirSync(join(gw.config.dataDir, "pi-sessions")).length).toBe(files);
	});

	it("another principal gets 404 as for GET; a read share may fork, into a session and an area of its own", async () => {
		const get = await gw.api(`/v1/sessions/${original}`, { headers: as("bob") });
		const bobs = await fork(original, {}, "bob", { "idempotency-key": "bob-fork-1" });
		expect([bobs.status, bobs.body.code]).toEqual([404, "session_not_found"]);
		expect(bobs.body.detail).toBe(get.body.detail);
		// An approver (a share to answer, a key with sessions:write) may not read it: not there either.
		const approver = await gw.api(`/v1/sessions/${original}/access`, {
			method: "PUT",
			headers: as("alice"),
			json: { grants: [{ principal: "carol", can: ["answer"] }] },
		});
		expect(approver.status).toBe(200);
		expect((await fork(original, {}, "carol")).status).toBe(404);

		const shared = await gw.api(`/v1/sessions/${original}/access`, {
			method: "PUT",
			headers: as("alice"),
			json: { grants: [{ principal: "bob", can: ["read"] }] },
		});
		expect(shared.status).toBe(200);
		const his = await fork(original, {}, "bob");
		expect(his.status).toBe(201);
		expect(his.body.cwd).toBe(join(realpathSync(gw.workspace), "@bob", his.body.id));
		expect((await gw.api(`/v1/sessions/${his.body.id}/access`, { headers: as("bob") })).body.owner).toBe("bob");
		expect((await gw.api(`/v1/sessions/${his.body.id}`, { headers: as("alice") })).status).toBe(404);
		expect((await prompt(his.body.id, "echo: his own", "bob")).status).toBe(200);
		// A read share does not let him drive the original.
		expect((await prompt(original, "echo: not his", "bob")).status).toBe(404);
	});

	it("takes an Idempotency-Key as a create does: a retry answers the same new session", async () => {
		const sessions = await aliceSessions();
		const first = await fork(original, { name: "retried" }, "alice", { "idempotency-key": "fork-key-1" });
		const again = await fork(original, { name: "retried" }, "alice", { "idempotency-key": "fork-key-1" });
		expect([first.status, again.status]).toEqual([201, 201]);
		expect(again.body.id).toBe(first.body.id);
		expect(again.res.headers.get("idempotent-replayed")).toBe("true");
		expect(await aliceSessions()).toBe(sessions + 1);
	});

	it("the TypeScript and Python clients fork (forkSession, fork_session)", async () => {
		const client = new PiGateway({ baseUrl: gw.url, token: key.alice });
		const ts = await client.forkSession(original, { name: "from ts" });
		expect([ts.forkedFrom.sessionId, ts.name]).toEqual([original, "from ts"]);
		const script = [
			"import asyncio, json, os, sys",
			"from pi_gateway import PiGateway",
			"from pi_gateway.aio import AsyncPiGateway",
			"url, token, sid = sys.argv[1:4]",
			"sync = PiGateway(url, token).fork_session(sid, name='from py')",
			"aio = asyncio.run(AsyncPiGateway(url, token).fork_session(sid, idempotency_key='py-1'))",
			"print(json.dumps([sync['forkedFrom'], sync['name'], aio['forkedFrom']]))",
		].join("\n");
		const repo = resolve(import.meta.dirname, "../..");
		const { stdout } = await promisify(execFile)("python3", ["-c", script, gw.url, key.alice, original], {
			env: { ...process.env, PYTHONPATH: join(repo, "clients/python/src"), PYTHONDONTWRITEBYTECODE: "1" },
		});
		const from = { sessionId: original, entryId: null };
		expect(JSON.parse(stdout)).toEqual([from, "from py", from]);
	});
});
