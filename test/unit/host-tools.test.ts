import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayError } from "../../src/shared/errors.ts";
import { changedPaths, changesBetween } from "../../src/workspace/changes.ts";
import { searchWorkspace } from "../../src/workspace/search.ts";
import { Snapshots } from "../../src/workspace/snapshots.ts";
import { ChangeTracker } from "../../src/workspace/tracker.ts";

// What the gateway's host-side tools (git, ripgrep) make of bytes the agent wrote (issue 29).
let base: string;
beforeAll(() => {
	base = mkdtempSync(join(tmpdir(), "pi-gw-host-tools-"));
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

const folder = (name: string, files: Record<string, string | Buffer>) => {
	const dir = join(base, name);
	mkdirSync(dir, { recursive: true });
	for (const [path, body] of Object.entries(files)) writeFileSync(join(dir, path), body);
	return dir;
};
const search = { maxResults: 50, timeoutMs: 10_000 };
const limits = { maxFiles: 50, maxDiffBytes: 64 * 1024, maxTotalBytes: 1024 * 1024, timeoutMs: 20_000 };

describe("search output cannot throw in the event loop", () => {
	it.each(["auto", "off"] as const)(
		"ripgrep=%s: a 900,000-character line and a 6 MB JSON record are found or skipped, never thrown",
		async (ripgrep) => {
			const root = folder(`long-${ripgrep}`, {
				"long.txt": `${"a".repeat(900_000)}zz\n`,
				// Each \x01 is six bytes of JSON (\u0001): one record of 6 MB, past any line we buffer.
				"ctl.txt": `${"\x01".repeat(1_000_000)}zz\n`,
				"short.txt": "one zz\n",
			});
			const result = await searchWorkspace(root, { ...search, q: "zz", ripgrep });
			const byPath = new Map(result.matches.map((m) => [m.path, m]));
			expect(byPath.get("short.txt")).toEqual({ path: "short.txt", line: 1, text: "one zz" });
			expect(byPath.get("long.txt")).toMatchObject({ line: 1, text: "a".repeat(300) });
			// The next search still works (nothing of the last one left behind).
			expect((await searchWorkspace(root, { ...search, q: "one", ripgrep })).matches).toHaveLength(1);
		},
	);

	it.each(["auto", "off"] as const)(
		"ripgrep=%s: a line with NUL bytes around the match is reported, flagged binary",
		async (ripgrep) => {
			const root = folder(`binary-${ripgrep}`, {
				"blob.bin": Buffer.from("head\0\0\nmid\0 zz \0tail\nzz plain\n", "latin1"),
				"text.txt": "zz text\n",
			});
			const result = await searchWorkspace(root, { ...search, q: "zz", ripgrep });
			const sorted = [...result.matches].sort((a, b) => `${a.path}:${a.line}`.localeCompare(`${b.path}:${b.line}`));
			expect(sorted).toEqual([
				{ path: "blob.bin", line: 2, text: "mid\uFFFD zz \uFFFDtail", binary: true },
				{ path: "blob.bin", line: 3, text: "zz plain" },
				{ path: "text.txt", line: 1, text: "zz text" },
			]);
		},
	);
});

describe("nothing in the folder steers git", () => {
	it("a .gitignore of `*` hides no new file from what changed", async () => {
		const work = folder("ignored", { "kept.txt": "one\n" });
		const snaps = new Snapshots(join(base, "ignored-shadow"), work, 20_000);
		const before = await snaps.snapshot();
		writeFileSync(join(work, ".gitignore"), "*\n");
		writeFileSync(join(work, "new.txt"), "hidden?\n");
		writeFileSync(join(work, "kept.txt"), "one\ntwo\n");
		const after = await snaps.snapshot();
		const { files } = await changesBetween(snaps.repo, before, after, limits);
		expect(files.map((f) => [f.path, f.status])).toEqual([
			[".gitignore", "added"],
			["kept.txt", "modified"],
			["new.txt", "added"],
		]);
	});

	it("attributes in the folder neither hide a diff nor change what is stored, and run nothing", async () => {
		const marker = join(base, "filter-ran");
		const work = folder("attributes", { "a.txt": "one\r\n", "b.txt": "plain\n" });
		const snaps = new Snapshots(join(base, "attributes-shadow"), work, 20_000);
		const before = await snaps.snapshot();
		mkdirSync(join(work, ".git"));
		writeFileSync(join(work, ".git", "config"), `[filter "z"]\n\tclean = touch ${marker}\n\trequired\n`);
		writeFileSync(join(work, ".gitattributes"), "* -diff text eol=lf filter=z diff=z ident\n[attr]x binary\nb.txt x\n");
		writeFileSync(join(work, "a.txt"), "one\r\ntwo\r\n");
		writeFileSync(join(work, "b.txt"), "plain\nmore $Id: abc $\n");
		const after = await snaps.snapshot();
		const { files } = await changesBetween(snaps.repo, before, after, limits);
		const byPath = new Map(files.map((f) => [f.path, f]));
		expect(byPath.get("a.txt")).toMatchObject({ binary: false, truncated: false });
		// Stored as they are: CRLF kept, $Id$ not collapsed.
		expect(byPath.get("a.txt")?.diff).toContain("+two\r\n");
		expect(byPath.get("b.txt")).toMatchObject({ binary: false });
		expect(byPath.get("b.txt")?.diff).toContain("+more $Id: abc $");
		expect(existsSync(marker)).toBe(false);
	});
});

describe("a repository of the agent's own inside its folder", () => {
	it("is never entered: its config's filters do not run, on the first snapshot or any later one", async () => {
		const marker = join(base, "nested-process-ran");
		const work = folder("nested", { "top.txt": "top\n" });
		const nested = join(work, "inner");
		mkdirSync(nested);
		const plain = { env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" } };
		const git = (...args: string[]) =>
			execFileSync("git", ["-C", nested, "-c", "user.name=a", "-c", "user.email=a@b", ...args], plain);
		git("init", "-q");
		writeFileSync(join(nested, "f.txt"), "one\n");
		writeFileSync(join(nested, ".gitattributes"), "* filter=x\n");
		git("add", ".");
		git("commit", "-qm", "x");
		// Planted after the commit: git status inside this repository would start the process.
		writeFileSync(join(nested, ".git", "config"), `[filter "x"]\n\tprocess = touch ${marker}\n\trequired\n`, {
			flag: "a",
		});
		writeFileSync(join(work, ".gitmodules"), '[submodule "bad"]\n\tpath = inner\n\tupdate = !sh -c x\n\turl = ./x\n');
		const snaps = new Snapshots(join(base, "nested-shadow"), work, 20_000);
		const first = await snaps.snapshot();
		writeFileSync(join(nested, "f.txt"), "two\n");
		writeFileSync(join(work, "top.txt"), "top 2\n");
		const second = await snaps.snapshot();
		writeFileSync(join(nested, "f.txt"), "three\n");
		const third = await snaps.snapshot();
		expect(existsSync(marker)).toBe(false);
		// Its .gitmodules (invalid) fails nothing, and what changed beside it is there.
		const { files } = await changesBetween(snaps.repo, first, third, limits);
		expect(files.map((f) => f.path)).toEqual(["top.txt"]);
		expect(second).not.toBe(first);
	});
});

describe("a FIFO where git reads its own files", () => {
	it("holds one snapshot to its deadline at most, which then goes through covering it, as do the next ones (confined)", async () => {
		const data = join(base, "fifo-data");
		mkdirSync(data);
		const work = folder("fifo", { "a.txt": "one\n" });
		mkdirSync(join(work, "sub"));
		execFileSync("mkfifo", [join(work, ".gitattributes"), join(work, "sub", ".gitignore")]);
		const confine = { sandbox: true, hide: [data], cover: [] };
		const snaps = new Snapshots(join(data, "snapshots", "s1"), work, 2000, {}, confine);
		expect(await snaps.snapshot()).toMatch(/^[0-9a-f]{40}$/);
		const before = await snaps.snapshot();
		writeFileSync(join(work, "a.txt"), "two\n");
		const after = await snaps.snapshot();
		const { files } = await changesBetween(snaps.repo, before, after, limits);
		expect(files.map((f) => f.path)).toEqual(["a.txt"]);
	});
});

describe("ids read back from runs.json", () => {
	it("a tree id that is not one never becomes a git argument", async () => {
		const work = folder("ids", { "a.txt": "a\n" });
		const snaps = new Snapshots(join(base, "ids-shadow"), work, 20_000);
		const tree = await snaps.snapshot();
		const written = join(base, "written-by-git");
		const limits = { maxFiles: 5, maxDiffBytes: 1024, maxTotalBytes: 4096, timeoutMs: 20_000 };
		for (const bad of [`--output=${written}`, "HEAD", "-p", `${tree}\n`, tree.toUpperCase()]) {
			await expect(changesBetween(snaps.repo, bad, tree, limits)).rejects.toThrow(/not an object id/);
			await expect(changedPaths(snaps.repo, tree, bad, limits, 5)).rejects.toThrow(/not an object id/);
		}
		expect(existsSync(written)).toBe(false);
	});

	it("a manifest with forged or malformed entries: those runs are 404 run_not_found, never a 500", async () => {
		const dataDir = join(base, "tracker-data");
		const work = folder("tracker-work", { "a.txt": "a\n" });
		const id = "s1";
		// A second tracker on the same data dir reads runs.json as a restarted gateway would.
		const trackerOn = () =>
			new ChangeTracker(
				{
					dataDir,
					enabled: true,
					snapshotTimeoutMs: 20_000,
					limits: { maxFiles: 5, maxDiffBytes: 1024, maxTotalBytes: 4096 },
				},
				(sid) => (sid === id ? { cwd: work, emit: () => {} } : undefined),
				pino({ level: "silent" }),
			);
		const tracker = trackerOn();
		await tracker.ensureBase(id);
		const written = join(base, "forged-output");
		const dir = join(dataDir, "snapshots", id);
		const good = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
		writeFileSync(
			join(dir, "runs.json"),
			JSON.stringify({
				base: `--output=${written}`,
				runs: [
					{ runId: "forged", start: `--output=${written}`, end: good },
					{ runId: "upper", start: good.toUpperCase(), end: good },
					{ runId: "number", start: 7, end: good },
					"not a run",
					null,
				],
			}),
		);
		const fresh = trackerOn();
		for (const runId of ["forged", "upper", "number", "unknown", "--output=x", ""]) {
			const error = await fresh.changes(id, runId).catch((caught: unknown) => caught);
			expect(error, runId).toBeInstanceOf(GatewayError);
			expect((error as GatewayError).status, runId).toBe(404);
		}
		expect(existsSync(written)).toBe(false);
		for (const shape of ["[]", '{"runs": 5}', '{"runs": {"a": 1}}', "null", '"x"']) {
			writeFileSync(join(dir, "runs.json"), shape);
			const again = new ChangeTracker(
				{
					dataDir,
					enabled: true,
					snapshotTimeoutMs: 20_000,
					limits: { maxFiles: 5, maxDiffBytes: 1024, maxTotalBytes: 4096 },
				},
				(sid) => (sid === id ? { cwd: work, emit: () => {} } : undefined),
				pino({ level: "silent" }),
			);
			const error = await again.changes(id, "forged").catch((caught: unknown) => caught);
			expect((error as GatewayError).status, shape).toBe(404);
		}
	});
});
