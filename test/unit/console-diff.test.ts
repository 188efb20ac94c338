import { describe, expect, it } from "vitest";
import { parseUnified, splitRows } from "../../console/workspace/unified.ts";

// The changes review draws what console/workspace/unified.ts makes of a unified diff (as GET
// …/changes gives it): every line with its numbers, and the same lines paired side by side.
const diff = [
	"diff --git a/notes.txt b/notes.txt",
	"index 1111111..2222222 100644",
	"--- a/notes.txt",
	"+++ b/notes.txt",
	"@@ -1,3 +1,4 @@ heading",
	" line one",
	"-line two",
	"-line 2b",
	"+line TWO",
	" line three",
	"+    return a - b",
	"\\ No newline at end of file",
	"",
].join("\n");

describe("the console's unified diff reading", () => {
	it("numbers every line on its side and counts additions and deletions; the file header is not a line", () => {
		const parsed = parseUnified(diff);
		expect(parsed.added).toBe(2);
		expect(parsed.removed).toBe(2);
		expect(parsed.lines).toEqual([
			{ kind: "hunk", text: "@@ -1,3 +1,4 @@ heading", oldStart: 1, newStart: 1 },
			{ kind: "context", text: "line one", old: 1, new: 1 },
			{ kind: "del", text: "line two", old: 2 },
			{ kind: "del", text: "line 2b", old: 3 },
			{ kind: "add", text: "line TWO", new: 2 },
			{ kind: "context", text: "line three", old: 4, new: 3 },
			{ kind: "add", text: "    return a - b", new: 4 },
		]);
	});

	it("pairs a run of deletions with the additions after it, side by side; the rest stays one-sided", () => {
		const rows = splitRows(parseUnified(diff).lines);
		expect(rows.map((r) => (r.kind === "hunk" ? "hunk" : [r.left?.text ?? null, r.right?.text ?? null]))).toEqual([
			"hunk",
			["line one", "line one"],
			["line two", "line TWO"],
			["line 2b", null],
			["line three", "line three"],
			[null, "    return a - b"],
		]);
	});

	it("reads a new file's diff (no old side) and a text with two files in it", () => {
		const added = parseUnified("--- /dev/null\n+++ b/a.py\n@@ -0,0 +1,2 @@\n+x = 1\n+y = 2\n");
		expect(added.lines.filter((l) => l.kind === "add").map((l) => (l.kind === "add" ? l.new : 0))).toEqual([1, 2]);
		const two = parseUnified("@@ -1 +1 @@\n-a\n+b\ndiff --git a/c b/c\n--- a/c\n+++ b/c\n@@ -5 +5 @@\n-c\n+d\n");
		expect(two.lines.map((l) => l.text)).toEqual(["@@ -1 +1 @@", "a", "b", "@@ -5 +5 @@", "c", "d"]);
		expect(two.lines[4]).toMatchObject({ kind: "del", old: 5 });
	});
});
