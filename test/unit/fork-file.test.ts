import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/config.ts";
import { readForkedConversation, writeForkedConversation } from "../../src/sessions/process/fork-file.ts";
import { piSessionDir } from "../../src/sessions/process/session-files.ts";

// A fork's conversation (fork-file.ts): pi's JSONL cut at an entry, as untrusted bytes.
const root = mkdtempSync(join(tmpdir(), "pi-gateway-fork-file-"));
const config = parseConfig({ workspaceRoot: join(root, "ws"), dataDir: join(root, "data") });
const folder = join(piSessionDir(config), "one");
mkdirSync(folder, { recursive: true });
afterAll(() => rmSync(root, { recursive: true, force: true }));

const header = { type: "session", version: 3, id: "orig", timestamp: "t", cwd: "/orig", parentSession: "/x.jsonl" };
const entry = (id: string, parentId: string | null, text = id) =>
	({ type: "message", id, parentId, timestamp: "t", message: { role: "user", content: text } }) as const;
// a ─ b ─ c      (a branch: b ─ d)
const lines = [header, entry("a", null), entry("b", "a"), entry("c", "b"), entry("d", "b")].map((e) =>
	JSON.stringify(e),
);
let n = 0;
function file(text: string): string {
	const path = join(folder, `f${n++}.jsonl`);
	writeFileSync(path, text);
	return path;
}
const ids = (got: { lines: string[] } | undefined) => got?.lines.map((l) => JSON.parse(l).id);

describe("readForkedConversation", () => {
	it("keeps every entry without an entry id, and the path from the root to it, inclusive, with one", async () => {
		const path = file(`${lines.join("\n")}\n`);
		expect(ids(await readForkedConversation(config, path, undefined))).toEqual(["a", "b", "c", "d"]);
		expect(ids(await readForkedConversation(config, path, "d"))).toEqual(["a", "b", "d"]);
		expect(ids(await readForkedConversation(config, path, "a"))).toEqual(["a"]);
	});

	it("keeps each kept line's bytes; drops lines that are not JSON objects and a half-written last line", async () => {
		const path = file(
			[lines[0], "not json", "[1,2]", lines[1], "", `${lines[2]}\r`, lines[3]?.slice(0, 20)].join("\n"),
		);
		const got = await readForkedConversation(config, path, undefined);
		expect(got?.lines).toEqual([lines[1], lines[2]]);
		expect(got?.version).toBe(3);
	});

	it("refuses an unknown entry (404), a file without a header or a loop of parents (409), a link (409)", async () => {
		const path = file(lines.join("\n"));
		await expect(readForkedConversation(config, path, "zz")).rejects.toMatchObject({
			status: 404,
			code: "entry_not_found",
		});
		const headless = file(lines.slice(1).join("\n"));
		await expect(readForkedConversation(config, headless, undefined)).rejects.toMatchObject({ status: 409 });
		const loop = file([lines[0], JSON.stringify(entry("x", "y")), JSON.stringify(entry("y", "x"))].join("\n"));
		await expect(readForkedConversation(config, loop, "x")).rejects.toMatchObject({ code: "conversation_unreadable" });
		// The agent can write its folder: a file swapped for a link to the gateway's own files is not read.
		writeFileSync(join(root, "gateway-secret.json"), lines.join("\n"));
		const link = join(folder, "link.jsonl");
		symlinkSync(join(root, "gateway-secret.json"), link);
		await expect(readForkedConversation(config, link, undefined)).rejects.toMatchObject({ status: 409 });
		await expect(readForkedConversation(config, join(root, "gateway-secret.json"), undefined)).rejects.toMatchObject({
			status: 409,
		});
	});

	it("a file not written yet is an empty conversation, and has no entries", async () => {
		expect(await readForkedConversation(config, join(folder, "later.jsonl"), undefined)).toBeUndefined();
		expect(await readForkedConversation(config, undefined, undefined)).toBeUndefined();
		await expect(readForkedConversation(config, undefined, "a")).rejects.toMatchObject({ status: 404 });
	});
});

describe("writeForkedConversation", () => {
	it("writes a new header (new id, the fork's cwd, no parentSession) in a folder of its own", async () => {
		const got = await readForkedConversation(config, file(lines.join("\n")), "c");
		const written = await writeForkedConversation(config, got as never, "/ws/@alice/ses_new");
		expect(dirname(dirname(written))).toBe(piSessionDir(config));
		expect(dirname(written)).not.toBe(folder);
		const [head, ...rest] = readFileSync(written, "utf8").trimEnd().split("\n");
		const parsed = JSON.parse(head as string);
		expect(parsed).toMatchObject({ type: "session", version: 3, cwd: "/ws/@alice/ses_new" });
		expect(parsed.id).not.toBe("orig");
		expect(parsed.parentSession).toBeUndefined();
		expect(written.endsWith(`_${parsed.id}.jsonl`)).toBe(true);
		expect(rest).toEqual([lines[1], lines[2], lines[3]]);
	});
});
