import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { archiveStream, listArchive } from "../../src/workspace/archive.ts";
import { changesBetween } from "../../src/workspace/changes.ts";
import { globMatcher } from "../../src/workspace/glob.ts";
import { parseRange } from "../../src/workspace/reading.ts";
import { findRipgrep, searchWorkspace } from "../../src/workspace/search.ts";
import { Snapshots } from "../../src/workspace/snapshots.ts";

let base: string;
let root: string;

beforeAll(() => {
	base = mkdtempSync(join(tmpdir(), "pi-gw-ws-"));
	root = join(base, "root");
	mkdirSync(join(root, "src", "deep"), { recursive: true });
	mkdirSync(join(root, ".hidden"));
	mkdirSync(join(base, "outside"));
	writeFileSync(join(base, "outside", "needle.txt"), "needle outside\n");
	writeFileSync(join(root, "src", "needle.py"), "x = 1\nneedle()\n");
	writeFileSync(join(root, "src", "deep", "b.ts"), "// Needle capital\n// needle small\n");
	writeFileSync(join(root, ".hidden", "needle.txt"), "needle hidden\n");
	writeFileSync(join(root, "bin.dat"), Buffer.from([0, 1, 2, 110, 101, 101, 100, 108, 101]));
	symlinkSync("../outside", join(root, "out"));
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

const options = { q: "needle", maxResults: 50, timeoutMs: 5000 };
const sorted = (matches: { path: string; line: number | null }[]) =>
	[...matches].sort((a, b) => `${a.path}:${a.line}`.localeCompare(`${b.path}:${b.line}`));

describe("workspace search: ripgrep and the built-in walk find the same", () => {
	it("rg is on PATH here (both engines are tested)", () => {
		expect(findRipgrep()).toBeTruthy();
	});

	it.each(["auto", "off"] as const)(
		"ripgrep=%s: names, then lines, smart case, no hidden files, no symlinks followed",
		async (ripgrep) => {
			const result = await searchWorkspace(root, { ...options, ripgrep });
			expect(result.engine).toBe(ripgrep === "auto" ? "ripgrep" : "node");
			expect(sorted(result.matches)).toEqual([
				// A file with NUL bytes is searched too; its line is flagged (issue 29).
				{ path: "bin.dat", line: 1, text: "\uFFFD\u0001\u0002needle", binary: true },
				{ path: "src/deep/b.ts", line: 1, text: "// Needle capital" },
				{ path: "src/deep/b.ts", line: 2, text: "// needle small" },
				{ path: "src/needle.py", line: 2, text: "needle()" },
				{ path: "src/needle.py", line: null, text: null },
			]);
			expect(result.truncated).toBe(false);
			const capital = await searchWorkspace(root, { ...options, q: "Needle", ripgrep });
			expect(capital.matches).toEqual([{ path: "src/deep/b.ts", line: 1, text: "// Needle capital" }]);
			const globbed = await searchWorkspace(root, { ...options, glob: "**/*.py", ripgrep });
			expect(globbed.matches.every((m) => m.path === "src/needle.py")).toBe(true);
		},
	);

	it.each(["auto", "off"] as const)("ripgrep=%s: capped in results", async (ripgrep) => {
		const result = await searchWorkspace(root, { ...options, maxResults: 2, ripgrep });
		expect(result.matches).toHaveLength(2);
		expect(result.truncated).toBe(true);
	});

	it("a glob is an RE2 program: linear time, `**`, braces, base names", () => {
		expect(globMatcher("*.py")("a/b/c.py")).toBe(true);
		expect(globMatcher("src/**/*.ts")("src/a/b/c.ts")).toBe(true);
		expect(globMatcher("src/**/*.ts")("lib/c.ts")).toBe(false);
		expect(globMatcher("*.{ts,py}")("x.py")).toBe(true);
		const start = Date.now();
		expect(globMatcher("*a*a*a*a*a*a*a*a*a*a*b")("a".repeat(3000))).toBe(false);
		expect(Date.now() - start).toBeLessThan(500);
	});
});

describe("workspace archive", () => {
	it("a tar.gz that tar reads: files, folders, symlinks as links (never followed), long names", async () => {
		const long = `${"d".repeat(120)}/${"f".repeat(120)}.txt`;
		mkdirSync(join(root, "d".repeat(120)));
		writeFileSync(join(root, long), "long\n");
		const { entries } = await listArchive(root, 1024 * 1024);
		const file = join(base, "out.tar.gz");
		const chunks: Buffer[] = [];
		for await (const chunk of archiveStream(root, entries)) chunks.push(chunk as Buffer);
		writeFileSync(file, Buffer.concat(chunks));
		const listing = execFileSync("tar", ["-tvzf", file], { encoding: "utf8" });
		expect(listing).toContain("src/needle.py");
		expect(listing).toContain(long);
		expect(listing).toMatch(/out -> \.\.\/outside/);
		expect(listing).not.toContain("needle outside");
		const extracted = join(base, "x");
		mkdirSync(extracted);
		execFileSync("tar", ["-xzf", file, "-C", extracted]);
		expect(execFileSync("cat", [join(extracted, long)], { encoding: "utf8" })).toBe("long\n");
	});

	it("refuses a folder over the size cap before sending anything (413)", async () => {
		await expect(listArchive(root, 10)).rejects.toMatchObject({ status: 413, code: "archive_too_large" });
	});
});

describe("workspace snapshots and changes", () => {
	it("a shadow repository outside the folder; diffs capped per file and in total", async () => {
		const work = join(base, "work");
		mkdirSync(work);
		writeFileSync(join(work, "a.txt"), "a\n");
		writeFileSync(join(work, "big.txt"), "x\n");
		const snaps = new Snapshots(join(base, "shadow"), work, 10_000);
		const before = await snaps.snapshot();
		writeFileSync(join(work, "a.txt"), "a\nb\n");
		writeFileSync(join(work, "big.txt"), "y\n".repeat(10_000));
		writeFileSync(join(work, "new.bin"), Buffer.from([0, 0, 1]));
		const after = await snaps.snapshot();
		const limits = { maxFiles: 10, maxDiffBytes: 1024, maxTotalBytes: 1024 * 1024, timeoutMs: 10_000 };
		const { files } = await changesBetween(snaps.repo, before, after, limits);
		expect(files.map((f) => [f.path, f.status, f.binary, f.truncated])).toEqual([
			["a.txt", "modified", false, false],
			["big.txt", "modified", false, true],
			["new.bin", "added", true, false],
		]);
		expect(files[0]?.diff).toContain("+b");
		const few = await changesBetween(snaps.repo, before, after, { ...limits, maxFiles: 1 });
		expect(few.files).toHaveLength(1);
		expect(few.truncated).toBe(true);
		expect(execFileSync("ls", ["-A", work], { encoding: "utf8" }).split("\n").filter(Boolean).sort()).toEqual([
			"a.txt",
			"big.txt",
			"new.bin",
		]);
	});
});

describe("byte ranges", () => {
	it.each([
		["bytes=0-0", { start: 0, end: 0 }],
		["bytes=5-", { start: 5, end: 9 }],
		["bytes=-3", { start: 7, end: 9 }],
		["bytes=8-100", { start: 8, end: 9 }],
		["bytes=10-", "unsatisfiable"],
		["bytes=5-4", "unsatisfiable"],
		["bytes=0-1,4-5", undefined],
		["items=0-1", "unsatisfiable"],
	])("%s of 10 bytes", (header, expected) => {
		expect(parseRange(header, 10)).toEqual(expected);
	});
});
