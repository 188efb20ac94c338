import { describe, expect, it } from "vitest";
import { matchesNewSide, withGaps } from "../../console/workspace/context.ts";
import { intraline, lineRanges } from "../../console/workspace/intraline.ts";
import { detectRenames, similarity } from "../../console/workspace/renames.ts";
import { defaultRun, runName } from "../../console/workspace/run-label.ts";
import { parseUnified } from "../../console/workspace/unified.ts";

// What the changes review (issue 46 item 4) makes of GET …/changes, on literal diffs: the changed
// characters inside a line, the hidden lines between hunks, renames out of a deletion and an
// addition, and the run picker's default and labels.
const file = (path: string, status: "added" | "modified" | "deleted", diff: string | null) => ({
	path,
	status,
	binary: false,
	diff,
	truncated: false,
});

describe("changed characters inside a line", () => {
	it("marks on each side only what the other side does not have", () => {
		const r = lineRanges("    return a + b  # sum", "    return a * b  # product");
		expect(r?.old.map(([a, b]) => "    return a + b  # sum".slice(a, b))).toEqual(["+", "sum"]);
		expect(r?.new.map(([a, b]) => "    return a * b  # product".slice(a, b))).toEqual(["*", "product"]);
	});

	it("marks nothing in a rewritten line, or in identical ones", () => {
		expect(lineRanges("alpha beta gamma", "one two three four")).toBeUndefined();
		expect(lineRanges("same", "same")).toBeUndefined();
	});

	it("pairs the n-th deletion of a run with the n-th addition after it", () => {
		const { lines } = parseUnified(
			["@@ -1,3 +1,3 @@", " keep", "-let x = 1;", "-let y = 2;", "+let x = 10;", "+let y = 20;", ""].join("\n"),
		);
		const marks = intraline(lines);
		expect([...marks.keys()].sort()).toEqual([2, 3, 4, 5]);
		expect(marks.get(4)?.map(([a, b]) => lines[4]?.text.slice(a, b))).toEqual(["10"]);
	});
});

describe("hidden lines between hunks", () => {
	const diff = [
		"@@ -2,3 +2,3 @@ def head():",
		" two",
		"-three",
		"+THREE",
		" four",
		"@@ -10,2 +10,3 @@ def tail():",
		" ten",
		"+ten and a half",
		" eleven",
		"",
	].join("\n");
	const { lines } = parseUnified(diff);
	const full = [
		"one",
		"two",
		"THREE",
		"four",
		"five",
		"six",
		"seven",
		"eight",
		"nine",
		"ten",
		"ten and a half",
		"eleven",
		"twelve",
	];

	it("are gaps before, between and after the hunks, with their sizes", () => {
		const rows = withGaps(lines, { trailing: true, total: full.length });
		const gaps = rows.filter((r) => r.kind === "gap").map((r) => (r.kind === "gap" ? [r.from, r.to, r.delta] : 0));
		expect(gaps).toEqual([
			[1, 1, 0],
			[5, 9, 0],
			[13, 13, 1],
		]);
	});

	it("an open gap is the file's lines with both numbers", () => {
		const rows = withGaps(lines, { trailing: true, total: full.length, full, open: new Set([1, 2]) });
		const shown = rows
			.filter((r) => r.kind === "context")
			.map((r) => (r.kind === "context" ? [r.old, r.new, r.text] : 0));
		expect(shown).toContainEqual([5, 5, "five"]);
		expect(shown).toContainEqual([9, 9, "nine"]);
		expect(shown).toContainEqual([12, 13, "twelve"]);
		expect(rows.filter((r) => r.kind === "gap")).toHaveLength(1);
	});

	it("the file now must be the diff's new side, else its lines are not used", () => {
		expect(matchesNewSide(lines, full)).toBe(true);
		expect(
			matchesNewSide(
				lines,
				full.map((l) => (l === "ten" ? "TEN" : l)),
			),
		).toBe(false);
	});
});

describe("renames", () => {
	const body = ["def add(a, b):", "    return a + b", "", "def sub(a, b):", "    return a - b"];
	const asDiff = (sign: "+" | "-", lines: string[]) =>
		[
			`@@ ${sign === "-" ? `-1,${lines.length} +0,0` : `-0,0 +1,${lines.length}`} @@`,
			...lines.map((l) => sign + l),
			"",
		].join("\n");

	it("a deletion and an addition with the same lines are one file moved, with no diff", () => {
		const entries = detectRenames([
			file("calc.py", "deleted", asDiff("-", body)),
			file("lib/calc.py", "added", asDiff("+", body)),
			file("other.txt", "added", asDiff("+", ["unrelated"])),
		]);
		// In the list where the new path is (git's order, by path).
		expect(entries.map((e) => [e.from, e.file.path, e.similarity])).toEqual([
			["calc.py", "lib/calc.py", 100],
			[undefined, "other.txt", undefined],
		]);
		expect(entries[0]?.parsed?.lines).toEqual([]);
	});

	it("a file moved and edited keeps a diff of what changed; under half the same is not a rename", () => {
		const edited = body.map((l) => (l === "    return a - b" ? "    return a - b  # minus" : l));
		const [moved] = detectRenames([
			file("a.py", "deleted", asDiff("-", body)),
			file("b.py", "added", asDiff("+", edited)),
		]);
		expect(moved?.from).toBe("a.py");
		expect([moved?.parsed?.added, moved?.parsed?.removed]).toEqual([1, 1]);
		expect(similarity(["a", "b", "c"], ["a", "x", "y"])).toBe(33);
		expect(
			detectRenames([
				file("a.txt", "deleted", asDiff("-", ["a", "b", "c"])),
				file("b.txt", "added", asDiff("+", ["a", "x", "y"])),
			]).map((e) => e.from),
		).toEqual([undefined, undefined]);
	});
});

describe("the run picker", () => {
	const run = (runId: string, files: number, prompt?: string) => ({
		runId,
		files: Array.from({ length: files }, (_, i) => ({ path: `f${i}`, status: "added" })),
		prompt,
		at: Date.UTC(2026, 2, 2, 10, 5),
	});

	it("opens on the latest run that changed files, else on the whole session", () => {
		expect(defaultRun([run("gw_1", 6), run("gw_2", 0)])).toBe("gw_1");
		expect(defaultRun([run("gw_1", 0)])).toBe("");
		expect(defaultRun([])).toBe("");
	});

	it("names a run by its time, its prompt and what it changed", () => {
		const name = runName(run("gw_1", 2, "bash: printf 'x' > a.txt"), 0, { files: 2, added: 7, removed: 1 });
		expect(name).toMatch(/^\d\d?:\d\d( [AP]M)? · bash: printf 'x' > a\.txt · 2 files \+7 −1$/);
		expect(runName(run("gw_2", 0, "echo: hi"), 1)).toMatch(/ · echo: hi · no files changed$/);
	});
});
