import { execFileSync } from "node:child_process";
import {
	chmodSync,
	existsSync,
	lstatSync,
	mkdirSync,
	mkdtempSync,
	readdirSync,
	readFileSync,
	readlinkSync,
	realpathSync,
	rmSync,
	statSync,
	symlinkSync,
	writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { copyFolder, staysInside } from "../../src/workspace/folder-copy.ts";

// A fork's copy of a session's folder (folder-copy.ts): the agent's tree read as hostile, links
// kept only when they stay inside, bounded before anything is written.
const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-gateway-folder-copy-")));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const fresh = () => join(root, `to-${n++}`);

describe("staysInside: a link's target, by its text alone", () => {
	it.each([
		["a", "b", true],
		["a", "sub/dir/file", true],
		["a", "./b/./c", true],
		["d/a", "../b", true],
		["d/e/a", "../../b", true],
		["d/a", "..", true],
		["a", ".", true],
		["a", "../b", false],
		["d/a", "../../b", false],
		["a", "/etc/passwd", false],
		["a", "b/../c", false],
		["d/a", "x/../../..", false],
		["a", "", false],
	])("%s -> %s: %s", (path, target, inside) => {
		expect(staysInside(path, Buffer.from(target))).toBe(inside);
	});
});

describe("copyFolder", () => {
	it("copies files, folders, modes and inside links; leaves out links that lead out, FIFOs", async () => {
		const from = join(root, "from");
		mkdirSync(join(from, "sub/deeper"), { recursive: true });
		writeFileSync(join(from, "a.txt"), "alpha");
		writeFileSync(join(from, "sub/deeper/b.bin"), Buffer.from([9, 8, 7]));
		writeFileSync(join(from, "run.sh"), "#!/bin/sh\n");
		chmodSync(join(from, "run.sh"), 0o4755);
		writeFileSync(join(root, "outside.txt"), "CANARY");
		symlinkSync("a.txt", join(from, "to-a"));
		symlinkSync("../a.txt", join(from, "sub/to-a"));
		symlinkSync(join(root, "outside.txt"), join(from, "absolute"));
		symlinkSync("../outside.txt", join(from, "climbs"));
		symlinkSync("deeper/../../../outside.txt", join(from, "sub/sneaky"));
		execFileSync("mkfifo", [join(from, "pipe")]);
		chmodSync(join(from, "sub"), 0o555);
		const to = fresh();
		const copy = await copyFolder(from, to, root, 1024);
		chmodSync(join(from, "sub"), 0o755);
		expect(copy).toMatchObject({ files: 3, folders: 2, links: 2, bytes: 18, skipped: 4 });
		expect(copy.skippedPaths.map((s) => s.path)).toEqual(["absolute", "climbs", "pipe", "sub/sneaky"]);
		expect(readFileSync(join(to, "a.txt"), "utf8")).toBe("alpha");
		expect(readFileSync(join(to, "sub/deeper/b.bin"))).toEqual(Buffer.from([9, 8, 7]));
		expect(readlinkSync(join(to, "to-a"))).toBe("a.txt");
		expect(readlinkSync(join(to, "sub/to-a"))).toBe("../a.txt");
		for (const gone of ["absolute", "climbs", "pipe", "sub/sneaky"]) expect(existsSync(join(to, gone))).toBe(false);
		expect(lstatSync(join(to, "absolute"), { throwIfNoEntry: false })).toBeUndefined();
		// Permission bits, but no set-id bit; a read-only folder stays read-only once filled.
		expect(statSync(join(to, "run.sh")).mode & 0o7777).toBe(0o755);
		expect(statSync(join(to, "sub")).mode & 0o777).toBe(0o555);
		expect(Math.abs(statSync(join(to, "a.txt")).mtimeMs - statSync(join(from, "a.txt")).mtimeMs)).toBeLessThan(0.01);
		chmodSync(join(to, "sub"), 0o755);
	});

	it("refuses a folder over the bound with 413 before it makes anything", async () => {
		const from = join(root, "big");
		mkdirSync(from);
		writeFileSync(join(from, "one"), Buffer.alloc(600));
		writeFileSync(join(from, "two"), Buffer.alloc(600));
		const to = fresh();
		await expect(copyFolder(from, to, root, 1000)).rejects.toMatchObject({ status: 413, code: "folder_too_large" });
		expect(existsSync(to)).toBe(false);
	});

	it("does not copy the copy into itself when it lies inside the folder (a session working in its area)", async () => {
		const area = join(root, "area");
		mkdirSync(join(area, "ses_old"), { recursive: true });
		writeFileSync(join(area, "ses_old/x"), "x");
		const to = join(area, "ses_new");
		const copy = await copyFolder(area, to, root, 1024);
		expect(readdirSync(to)).toEqual(["ses_old"]);
		expect(copy).toMatchObject({ files: 1, folders: 1 });
	});

	it("refuses a source that is a link now (409 folder_replaced), and never makes the copy through a link", async () => {
		const real = join(root, "real");
		mkdirSync(real);
		symlinkSync(real, join(root, "swapped"));
		await expect(copyFolder(join(root, "swapped"), fresh(), root, 1024)).rejects.toMatchObject({ status: 409 });
		symlinkSync(real, join(root, "to-link"));
		await expect(copyFolder(real, join(root, "to-link/inside"), root, 1024)).rejects.toMatchObject({ status: 409 });
		expect(readdirSync(real)).toEqual([]);
	});
});
