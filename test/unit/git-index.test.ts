import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { changesBetween } from "../../src/workspace/changes.ts";
import { emptyTree } from "../../src/workspace/git.ts";
import { forgetRecentStat, recentEntries } from "../../src/workspace/git-index.ts";
import { Snapshots } from "../../src/workspace/snapshots.ts";

const root = mkdtempSync(join(tmpdir(), "pi-gateway-git-index-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/**
 * A plain repository whose index holds `files` (relative paths as bytes). A path longer than the
 * system allows is put in the index without a file (git could not read one there).
 */
function repoWith(name: string, files: Buffer[]) {
	const dir = join(root, name);
	mkdirSync(dir);
	execFileSync("git", ["init", "-q", dir]);
	const blob = execFileSync("git", ["-C", dir, "hash-object", "-w", "--stdin"], { input: "x" }).toString().trim();
	for (const file of files) {
		if (file.length >= 4096) {
			execFileSync("git", ["-C", dir, "update-index", "--add", "--cacheinfo", `100644,${blob},${file}`]);
			continue;
		}
		const path = Buffer.concat([Buffer.from(`${dir}/`), file]);
		const parent = path.subarray(0, path.lastIndexOf(0x2f));
		mkdirSync(parent, { recursive: true });
		writeFileSync(path, "x");
		// mtime an hour back, change time now: what forgetRecentStat looks for.
		const old = new Date(Date.now() - 3_600_000);
		utimesSync(path, old, old);
	}
	execFileSync("git", ["-C", dir, "add", "--all"]);
	const listed = () =>
		execFileSync("git", ["-C", dir, "ls-files", "-z"])
			.toString("latin1")
			.split("\0")
			.filter(Boolean)
			.map((p) => Buffer.from(p, "latin1"));
	return { dir, index: () => readFileSync(join(dir, ".git", "index")), listed };
}

// 21 folders of 200 bytes: past the 4,095 bytes an index entry's flags can count.
const deep = Buffer.from(
	`${Array.from({ length: 21 }, (_, i) => `${String(i).padStart(3, "0")}${"d".repeat(197)}`).join("/")}/f`,
);
const names = [
	Buffer.from("plain.txt"),
	Buffer.from("tab\tand space.txt"),
	Buffer.from([0x6c, 0x61, 0x74, 0x69, 0x6e, 0xe9, 0x2e, 0x74, 0x78, 0x74]), // "latin\xe9.txt": not UTF-8
	Buffer.from("sub/ünï.txt"),
	deep,
];

describe("recentEntries reads git's own index", () => {
	it("every entry, its path byte for byte (not UTF-8, tabs, past 4,095 bytes), as `git ls-files -z` lists them", () => {
		const repo = repoWith("v2", names);
		const index = repo.index();
		expect(index.readUInt32BE(4)).toBe(2);
		const entries = recentEntries(index, 0);
		expect(entries.map((e) => e.path)).toEqual(repo.listed());
		expect(entries.some((e) => e.path.equals(deep))).toBe(true);
		for (const entry of entries) {
			expect(entry.mode).toBe(0o100644);
			expect(entry.objectId).toBe(execFileSync("git", ["hash-object", "--stdin"], { input: "x" }).toString().trim());
		}
		// Change times are in the past: none is at or after the next minute.
		expect(recentEntries(index, Math.floor(Date.now() / 1000) + 60)).toEqual([]);
	});

	it("a version 3 index (an intent-to-add entry has the extended flags)", () => {
		const repo = repoWith("v3", names);
		writeFileSync(join(repo.dir, "later.txt"), "later");
		execFileSync("git", ["-C", repo.dir, "add", "--intent-to-add", "later.txt"]);
		const index = repo.index();
		expect(index.readUInt32BE(4)).toBe(3);
		expect(recentEntries(index, 0).map((e) => e.path)).toEqual(repo.listed());
	});

	it("refuses what it does not read (a version 4 index, a cut one) rather than passing it", () => {
		const repo = repoWith("v4", [Buffer.from("a.txt")]);
		execFileSync("git", ["-C", repo.dir, "update-index", "--index-version", "4"]);
		expect(() => recentEntries(repo.index(), 0)).toThrow(/version 4/);
		const v2 = repoWith("cut", [Buffer.from("a.txt"), Buffer.from("b.txt")]).index();
		expect(() => recentEntries(v2.subarray(0, 80), 0)).toThrow(/cut short/);
	});
});

describe("forgetRecentStat", () => {
	it("leaves alone what git checks again itself: an entry whose mtime is in the index's own second", async () => {
		const dir = join(root, "racy");
		mkdirSync(dir);
		execFileSync("git", ["init", "-q", dir]);
		for (let tries = 1; ; tries++) {
			writeFileSync(join(dir, "plain.txt"), `plain ${tries}`);
			execFileSync("git", ["-C", dir, "add", "plain.txt"]);
			const index = statSync(join(dir, ".git", "index"));
			if (Math.floor(index.mtimeMs / 1000) !== Math.floor(statSync(join(dir, "plain.txt")).mtimeMs / 1000)) {
				expect(tries).toBeLessThan(10);
				continue;
			}
			expect(await forgetRecentStat({ gitDir: join(dir, ".git"), workTree: dir }, 0, 10_000)).toBe(0);
			return;
		}
	});

	it("takes the stat off a mapped file's entry, and off every entry when some mappings could not be read", async () => {
		const repo = repoWith("mapped", [Buffer.from("one.txt"), Buffer.from("two.txt")]);
		const gitRepo = { gitDir: join(repo.dir, ".git"), workTree: repo.dir };
		const future = Math.floor(Date.now() / 1000) + 60;
		const ino = statSync(join(repo.dir, "two.txt")).ino % 2 ** 32;
		expect(await forgetRecentStat(gitRepo, future, 10_000, { inodes: new Set(), unreadable: 0 })).toBe(0);
		expect(await forgetRecentStat(gitRepo, future, 10_000, { inodes: new Set([ino]), unreadable: 0 })).toBe(1);
		expect(recentEntries(repo.index(), 1).map((e) => e.path.toString())).toEqual(["one.txt"]);
		expect(await forgetRecentStat(gitRepo, future, 10_000, { inodes: new Set(), unreadable: 1 })).toBe(2);
	});

	it("leaves the index's paths and contents as they were (no name mangled into a new entry), their stat gone", async () => {
		const repo = repoWith("forget", names);
		const before = execFileSync("git", ["-C", repo.dir, "ls-files", "-s", "-z"]);
		const gitRepo = { gitDir: join(repo.dir, ".git"), workTree: repo.dir };
		expect(await forgetRecentStat(gitRepo, 0, 10_000)).toBe(names.length);
		expect(execFileSync("git", ["-C", repo.dir, "ls-files", "-s", "-z"])).toEqual(before);
		// No stat left (change times of 0): the next add reads each file again.
		expect(recentEntries(repo.index(), 1)).toEqual([]);
		expect(recentEntries(repo.index(), 0)).toHaveLength(names.length);
	});
});

it("an edit made in the second git read the file, at the same size, its mtime set back, is in the next snapshot", async () => {
	const folder = join(root, "hidden", "folder");
	mkdirSync(folder, { recursive: true });
	const snapshots = new Snapshots(join(root, "hidden", "snapshots"), folder, 10_000);
	const file = join(folder, "config.txt");
	const diff = (from: string, to: string) =>
		execFileSync("git", [
			"--git-dir",
			join(root, "hidden", "snapshots", "git"),
			"diff-tree",
			"-r",
			"--name-only",
			from,
			to,
		])
			.toString()
			.trim();
	let tries = 0;
	for (;;) {
		tries++;
		// The whole trick has to fit in one second of the clock: start it early in one.
		while (Date.now() % 1000 > 300) await new Promise((r) => setTimeout(r, 5));
		writeFileSync(file, `safe ${tries}`);
		const old = new Date(Date.now() - 3_600_000);
		utimesSync(file, old, old);
		const written = statSync(file);
		const before = await snapshots.snapshot();
		writeFileSync(file, `evil ${tries}`);
		utimesSync(file, old, old);
		const rewritten = statSync(file);
		if (Math.floor(rewritten.ctimeMs / 1000) !== Math.floor(written.ctimeMs / 1000)) {
			// The second turned between the two writes: git would see the change anyway. Again.
			expect(tries).toBeLessThan(10);
			continue;
		}
		expect(rewritten.mtimeMs).toBe(written.mtimeMs);
		expect(rewritten.size).toBe(written.size);
		expect(rewritten.ino).toBe(written.ino);
		const after = await snapshots.snapshot();
		expect(diff(before, after)).toBe("config.txt");
		break;
	}
});

it("a plain rewrite in the second of a snapshot, same size, is in the next one (git's own racy check)", async () => {
	const folder = join(root, "plain", "folder");
	mkdirSync(folder, { recursive: true });
	const snapshots = new Snapshots(join(root, "plain", "snapshots"), folder, 10_000);
	const file = join(folder, "plain.txt");
	for (let tries = 1; ; tries++) {
		while (Date.now() % 1000 > 300) await new Promise((r) => setTimeout(r, 5));
		writeFileSync(file, `one ${tries}`);
		const written = statSync(file);
		const before = await snapshots.snapshot();
		writeFileSync(file, `two ${tries}`);
		if (Math.floor(statSync(file).mtimeMs / 1000) !== Math.floor(written.mtimeMs / 1000)) {
			expect(tries).toBeLessThan(10);
			continue;
		}
		const after = await snapshots.snapshot();
		expect(after).not.toBe(before);
		return;
	}
});

it("a stored tree's diff is what was stored, even where the index's stat matches a file since rewritten", async () => {
	// git's diff reads a blob from the work tree when the index says the file there holds it; a
	// plain `git add` (no forgetRecentStat) leaves such an entry after a same-second rewrite.
	const dir = join(root, "stored");
	mkdirSync(dir);
	execFileSync("git", ["init", "-q", dir]);
	const repo = { gitDir: join(dir, ".git"), workTree: dir };
	const limits = { timeoutMs: 10_000, maxFiles: 10, maxDiffBytes: 10_000, maxTotalBytes: 100_000 };
	const file = join(dir, "notes.txt");
	const old = new Date(Date.now() - 3_600_000);
	for (let tries = 1; ; tries++) {
		while (Date.now() % 1000 > 300) await new Promise((r) => setTimeout(r, 5));
		writeFileSync(file, `stored ${tries}`);
		utimesSync(file, old, old);
		const written = statSync(file);
		execFileSync("git", ["-C", dir, "add", "notes.txt"]);
		const tree = execFileSync("git", ["-C", dir, "write-tree"]).toString().trim();
		writeFileSync(file, `reread ${tries}`);
		utimesSync(file, old, old);
		if (Math.floor(statSync(file).ctimeMs / 1000) !== Math.floor(written.ctimeMs / 1000)) {
			expect(tries).toBeLessThan(10);
			continue;
		}
		const { files } = await changesBetween(repo, emptyTree, tree, limits);
		expect(files[0]?.diff).toContain(`+stored ${tries}`);
		return;
	}
});
