import { execFileSync } from "node:child_process";
import {
	appendFileSync,
	chmodSync,
	existsSync,
	lstatSync,
	mkdirSync,
	mkdtempSync,
	readFileSync,
	readlinkSync,
	rmSync,
	statSync,
	symlinkSync,
	truncateSync,
	writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { reportFolder } from "../../src/cluster/folder-adoption.ts";
import { checkedRel } from "../../src/cluster/folder-home.ts";
import { asSession, type FolderNode, folderNode, recordOf } from "../helpers/folder-node.ts";
import { query, startTestPostgres, type TestPostgres } from "../helpers/postgres.ts";

/**
 * A session's folder kept in PostgreSQL by its owner and restored under another node's root
 * (src/cluster/folder-sync.ts with the real store, scan and restore). The folder is the agent's:
 * hostile names and file types, links that lead out, a database row that does not match its hash.
 */
let server: TestPostgres;
let url: string;
let dir: string;
const nodes: FolderNode[] = [];

beforeAll(async () => {
	server = await startTestPostgres();
});
afterAll(async () => {
	await server?.stop();
});
beforeEach(async () => {
	url = await server.freshDatabase();
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-folder-sync-"));
});
afterEach(async () => {
	await Promise.all(nodes.splice(0).map((n) => n.close()));
	rmSync(dir, { recursive: true, force: true });
});

async function node(name: string, maxBytes = 64 * 1024 * 1024) {
	const n = await folderNode(url, name, dir, { workspaceSyncMaxBytes: maxBytes });
	nodes.push(n);
	return n;
}

/** Node `to` takes `id` over from whichever node stored it: owner in the database, folder placed and restored. */
async function takeOver(to: FolderNode, id: string, storedCwd: string, options = {}) {
	await to.own(id);
	const placed = await to.sync.place(recordOf(id, storedCwd, { persist: true, ...options }));
	const session = to.session(id, placed.record.cwd);
	reportFolder(asSession(session), placed.report);
	return { placed, session };
}

describe("a hostile folder goes to another node as it was, and no further", () => {
	it("names with newlines and bytes that are not UTF-8, modes, empty folders and links as links; FIFOs skipped; past the cap left out and named", async () => {
		const [a, b] = [await node("a", 1024 * 1024), await node("b", 1024 * 1024)];
		const id = "ses_hostile";
		await a.own(id);
		const s = a.session(id);
		writeFileSync(join(s.cwd, "a\nb.txt"), "a newline in its name");
		const latin = Buffer.concat([Buffer.from(`${s.cwd}/f`), Buffer.from([0xff, 0xfe]), Buffer.from(".txt")]);
		writeFileSync(latin, "not UTF-8");
		mkdirSync(join(s.cwd, "sub/deep"), { recursive: true });
		writeFileSync(join(s.cwd, "sub/deep/file.txt"), "deep");
		writeFileSync(join(s.cwd, "run.sh"), "#!/bin/sh\n", { mode: 0o755 });
		chmodSync(join(s.cwd, "run.sh"), 0o751);
		mkdirSync(join(s.cwd, "empty"));
		execFileSync("mkfifo", [join(s.cwd, "pipe")]);
		// A sparse file of 10 GiB: past the cap, never read.
		writeFileSync(join(s.cwd, "huge.bin"), "");
		truncateSync(join(s.cwd, "huge.bin"), 10 * 1024 ** 3);
		symlinkSync("/etc/passwd", join(s.cwd, "passwd-link"));
		symlinkSync("/etc", join(s.cwd, "etc-link"));
		const started = Date.now();
		const stored = await a.sync.sync(id);
		expect(stored).toMatchObject({ outcome: "stored", omitted: 1 });
		expect(Date.now() - started).toBeLessThan(5000);
		// Said on the session's stream, with the flag to raise.
		expect(a.events).toContainEqual(
			expect.objectContaining({ type: "folder_sync", code: "folder_too_large", paths: ["huge.bin"], omitted: 1 }),
		);
		expect(a.sync.counts.overCap).toBe(1);

		const { placed, session } = await takeOver(b, id, s.cwd);
		expect(placed.record.cwd).toBe(join(b.root, id));
		const at = (p: string) => join(placed.record.cwd, p);
		expect(readFileSync(at("a\nb.txt"), "utf8")).toBe("a newline in its name");
		const latinThere = Buffer.concat([
			Buffer.from(`${placed.record.cwd}/f`),
			Buffer.from([0xff, 0xfe]),
			Buffer.from(".txt"),
		]);
		expect(readFileSync(latinThere, "utf8")).toBe("not UTF-8");
		expect(readFileSync(at("sub/deep/file.txt"), "utf8")).toBe("deep");
		expect(statSync(at("run.sh")).mode & 0o777).toBe(0o751);
		expect(statSync(at("empty")).isDirectory()).toBe(true);
		expect(existsSync(at("pipe"))).toBe(false);
		expect(existsSync(at("huge.bin"))).toBe(false);
		// Links come back as links pointing where they pointed; /etc is not copied.
		expect(readlinkSync(at("passwd-link"))).toBe("/etc/passwd");
		expect(lstatSync(at("etc-link")).isSymbolicLink()).toBe(true);
		expect(readlinkSync(at("etc-link"))).toBe("/etc");
		// What is missing is said: on the report (the view's folderRestore) and on the stream.
		expect(placed.report).toMatchObject({ complete: false, from: "a", missing: ["huge.bin"], missingCount: 1 });
		expect(session.folderRestore).toBe(placed.report);
		expect(b.events).toContainEqual(expect.objectContaining({ type: "folder_restore", missing: ["huge.bin"] }));
		expect(b.sync.counts.restoresIncomplete).toBe(1);
	});

	it("a link in this node's root where the folder or a folder in it goes is never written through", async () => {
		const [a, b] = [await node("a"), await node("b")];
		const outside = mkdtempSync(join(tmpdir(), "pi-gateway-outside-"));
		try {
			for (const id of ["ses_linked", "ses_inner"]) {
				await a.own(id);
				const s = a.session(id);
				mkdirSync(join(s.cwd, "sub"));
				writeFileSync(join(s.cwd, "sub/file.txt"), "mine");
				writeFileSync(join(s.cwd, "top.txt"), "top");
				expect((await a.sync.sync(id)).outcome).toBe("stored");
			}
			// On B, an agent (say, of a session working in the root) left links where these folders go.
			symlinkSync(outside, join(b.root, "ses_linked"));
			mkdirSync(join(b.root, "ses_inner"));
			symlinkSync(outside, join(b.root, "ses_inner", "sub"));
			const linked = await takeOver(b, "ses_linked", join(a.root, "ses_linked"));
			expect(linked.placed.report).toMatchObject({ complete: false });
			expect(linked.placed.report?.detail).toMatch(/link/);
			const inner = await takeOver(b, "ses_inner", join(a.root, "ses_inner"));
			expect(inner.placed.report).toMatchObject({ complete: false, missing: ["sub", "sub/file.txt"] });
			expect(readFileSync(join(b.root, "ses_inner", "top.txt"), "utf8")).toBe("top");
			expect(execFileSync("ls", ["-A", outside], { encoding: "utf8" })).toBe("");
		} finally {
			rmSync(outside, { recursive: true, force: true });
		}
	});

	it("a chunk whose content does not match its hash is not passed off as the file", async () => {
		const [a, b] = [await node("a"), await node("b")];
		const id = "ses_tampered";
		await a.own(id);
		const s = a.session(id);
		writeFileSync(join(s.cwd, "good.txt"), "good");
		writeFileSync(join(s.cwd, "bad.txt"), "original");
		await a.sync.sync(id);
		const hash = (await query(url, "SELECT hash FROM folder_entries WHERE path = $1", [Buffer.from("bad.txt")]))[0]
			?.hash;
		await query(url, "UPDATE folder_blobs SET content = $2 WHERE hash = $1", [hash, Buffer.from("tampered")]);
		const { placed } = await takeOver(b, id, s.cwd);
		expect(placed.report).toMatchObject({ complete: false, missing: ["bad.txt"] });
		expect(placed.report?.detail).toMatch(/does not match its hash/);
		expect(existsSync(join(placed.record.cwd, "bad.txt"))).toBe(false);
		expect(readFileSync(join(placed.record.cwd, "good.txt"), "utf8")).toBe("good");
	});

	it("the stored path is checked, never trusted: one that leads out of the root gives the session a new folder of its own", async () => {
		const [a, b] = [await node("a"), await node("b")];
		const id = "ses_escape";
		await a.own(id);
		const s = a.session(id);
		writeFileSync(join(s.cwd, "x.txt"), "x");
		await a.sync.sync(id);
		await query(url, "UPDATE folder_state SET rel = '../../../../tmp/evil' WHERE session_id = $1", [id]);
		const { placed } = await takeOver(b, id, s.cwd);
		expect(placed.record.cwd).toBe(join(b.root, id));
		expect(placed.report).toMatchObject({ complete: false });
		expect(placed.report?.detail).toMatch(/not a folder inside the workspace root/);
		expect(checkedRel("@alice/ses_1")).toBe("@alice/ses_1");
		for (const bad of ["../x", "a/../../x", "/etc", "a//b", "./a", "a/.", "a\0b", "..", "a\\..\\b"])
			expect(checkedRel(bad), bad).toBeUndefined();
	});
});

describe("storing costs what changed", () => {
	it("an unchanged folder writes nothing; one changed file writes its chunk and one row; content another session holds is not sent again", async () => {
		const a = await node("a");
		const id = "ses_cost";
		await a.own(id);
		const s = a.session(id);
		for (let i = 0; i < 500; i++) {
			mkdirSync(join(s.cwd, `d${i % 10}`), { recursive: true });
			writeFileSync(join(s.cwd, `d${i % 10}`, `f${i}.txt`), `file ${i}\n`.repeat(20));
		}
		// Old enough that a write in the same clock tick cannot hide behind an unchanged lstat.
		await new Promise((r) => setTimeout(r, 1100));
		const first = await a.sync.sync(id);
		expect(first).toMatchObject({ outcome: "stored", files: 510 });
		// Nothing written, nothing read: every lstat is the one its hash was taken at.
		const again = await a.sync.sync(id);
		expect(again).toMatchObject({ outcome: "unchanged", bytes: 0, read: 0 });
		appendFileSync(join(s.cwd, "d3/f3.txt"), "one more line\n");
		const changed = await a.sync.sync(id);
		expect(changed).toMatchObject({ outcome: "stored", read: 1 });
		const size = statSync(join(s.cwd, "d3/f3.txt")).size;
		expect(changed.bytes).toBeGreaterThan(size);
		expect(changed.bytes).toBeLessThan(size + 1024);
		// A second session with the same files: only its manifest's rows travel, no content.
		const blobs = async () => (await query(url, "SELECT count(*)::int AS n FROM folder_blobs"))[0]?.n as number;
		const before = await blobs();
		const other = "ses_copy";
		await a.own(other);
		const copy = a.session(other);
		execFileSync("cp", ["-a", `${s.cwd}/.`, copy.cwd]);
		expect((await a.sync.sync(other)).outcome).toBe("stored");
		expect(await blobs()).toBe(before);
	});
});
