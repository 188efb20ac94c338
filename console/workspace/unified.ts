/**
 * A unified diff (`diff --git …`, as GET …/changes gives it) as rows a review can draw: each line
 * with its numbers on the old and new side, hunks as separators, and the same lines paired side by
 * side for the split view. Pure, so it is tested with literal diffs (test/unit/console-diff.test.ts).
 */

export type Line =
	| { kind: "hunk"; text: string; oldStart?: number; newStart?: number }
	| { kind: "context" | "add" | "del"; text: string; old?: number; new?: number };

export interface Parsed {
	lines: Line[];
	added: number;
	removed: number;
}

const hunkHeader = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)$/;

export function parseUnified(diff: string): Parsed {
	const lines: Line[] = [];
	let added = 0;
	let removed = 0;
	let oldNo = 0;
	let newNo = 0;
	let inHunk = false;
	for (const raw of diff.split("\n")) {
		const header = hunkHeader.exec(raw);
		if (header) {
			oldNo = Number(header[1]);
			newNo = Number(header[2]);
			inHunk = true;
			lines.push({ kind: "hunk", text: raw, oldStart: oldNo, newStart: newNo });
			continue;
		}
		// The file header (diff --git, index, ---, +++) comes before the first hunk.
		if (!inHunk) continue;
		const sign = raw[0];
		const text = raw.slice(1);
		if (sign === "+") {
			lines.push({ kind: "add", text, new: newNo++ });
			added++;
		} else if (sign === "-") {
			lines.push({ kind: "del", text, old: oldNo++ });
			removed++;
		} else if (sign === " ") lines.push({ kind: "context", text, old: oldNo++, new: newNo++ });
		else if (sign === "\\")
			continue; // "\ No newline at end of file"
		else if (raw === "")
			continue; // the text's last newline
		else inHunk = false; // the next file's header, were two in one text
	}
	return { lines, added, removed };
}

export type Side = Extract<Line, { kind: "context" | "add" | "del" }> | undefined;
export type SplitRow = Extract<Line, { kind: "hunk" }> | { kind: "pair"; left: Side; right: Side };

/**
 * Side by side: context on both sides; a run of deletions paired line for line with the additions
 * after it. Any other row (a hunk's header, a gap of hidden lines: context.ts) is passed through.
 */
export function splitRows(lines: readonly Line[]): SplitRow[];
export function splitRows<O extends { kind: "gap" }>(lines: readonly (Line | O)[]): (SplitRow | O)[];
export function splitRows<O extends { kind: "gap" }>(lines: readonly (Line | O)[]): (SplitRow | O)[] {
	const rows: (SplitRow | O)[] = [];
	let dels: Side[] = [];
	let adds: Side[] = [];
	const flush = () => {
		for (let i = 0; i < Math.max(dels.length, adds.length); i++)
			rows.push({ kind: "pair", left: dels[i], right: adds[i] });
		dels = [];
		adds = [];
	};
	for (const line of lines) {
		if (line.kind === "del") {
			if (adds.length > 0) flush();
			dels.push(line);
		} else if (line.kind === "add") adds.push(line);
		else {
			flush();
			// Not add or del here: a context line, or a row of another kind passed through.
			rows.push(line.kind === "context" ? { kind: "pair", left: line, right: line } : (line as SplitRow | O));
		}
	}
	flush();
	return rows;
}
