import { createTwoFilesPatch } from "diff";
import type { WorkspaceFileChange } from "../api/types.ts";
import { type Line, parseUnified } from "./unified.ts";

/**
 * Renames, found here because GET …/changes lists a moved file as a deletion and an addition (git
 * is run with --no-renames there, so a file's diff is always its own path's). A deleted file and an
 * added file are one file moved when at least half of their lines are the same (git's own default
 * threshold, 50%), each deletion paired with the most similar addition. The pair is then shown as
 * one entry, its diff made here (jsdiff) from the old lines to the new: none when nothing but the
 * name changed. Files without a diff (binary, past the gateway's caps) are left as they are.
 * Pure: test/unit/console-review.test.ts.
 */
export type Entry = {
	file: WorkspaceFileChange;
	/** The old path, when this entry is a rename. */
	from?: string;
	/** Shared lines, 0..100, for a rename. */
	similarity?: number;
	parsed?: { lines: Line[]; added: number; removed: number };
};

const sideText = (diff: string, sign: "+" | "-") => {
	const { lines } = parseUnified(diff);
	return lines.filter((l) => l.kind === (sign === "+" ? "add" : "del")).map((l) => l.text);
};

/** Lines the two have in common (as multisets), over the longer one's count, in percent. */
export function similarity(a: readonly string[], b: readonly string[]): number {
	if (a.length === 0 && b.length === 0) return 100;
	const counts = new Map<string, number>();
	for (const line of a) counts.set(line, (counts.get(line) ?? 0) + 1);
	let shared = 0;
	for (const line of b) {
		const n = counts.get(line) ?? 0;
		if (n > 0) {
			shared++;
			counts.set(line, n - 1);
		}
	}
	return Math.floor((100 * shared) / Math.max(a.length, b.length));
}

const maxPairs = 400 * 400;

export function detectRenames(files: readonly WorkspaceFileChange[]): Entry[] {
	const deleted = files.filter((f) => f.status === "deleted" && f.diff !== null);
	const added = files.filter((f) => f.status === "added" && f.diff !== null);
	const renamed = new Map<
		WorkspaceFileChange,
		{ from: WorkspaceFileChange; score: number; old: string[]; now: string[] }
	>();
	if (deleted.length > 0 && added.length > 0 && deleted.length * added.length <= maxPairs) {
		const oldLines = new Map(deleted.map((f) => [f, sideText(f.diff as string, "-")]));
		const newLines = new Map(added.map((f) => [f, sideText(f.diff as string, "+")]));
		const candidates: { from: WorkspaceFileChange; to: WorkspaceFileChange; score: number }[] = [];
		for (const from of deleted)
			for (const to of added) {
				const score = similarity(oldLines.get(from) as string[], newLines.get(to) as string[]);
				if (score >= 50) candidates.push({ from, to, score });
			}
		// Best pairs first; a file takes part in one rename at most.
		candidates.sort((x, y) => y.score - x.score || x.to.path.localeCompare(y.to.path));
		const used = new Set<WorkspaceFileChange>();
		for (const c of candidates) {
			if (used.has(c.from) || used.has(c.to)) continue;
			used.add(c.from).add(c.to);
			renamed.set(c.to, {
				from: c.from,
				score: c.score,
				old: oldLines.get(c.from) as string[],
				now: newLines.get(c.to) as string[],
			});
		}
	}
	const gone = new Set([...renamed.values()].map((r) => r.from));
	const entries: Entry[] = [];
	for (const file of files) {
		if (gone.has(file)) continue;
		const rename = renamed.get(file);
		if (!rename) {
			entries.push({ file, parsed: file.diff ? parseUnified(file.diff) : undefined });
			continue;
		}
		const patch = createTwoFilesPatch(rename.from.path, file.path, joined(rename.old), joined(rename.now), "", "", {
			context: 3,
		});
		entries.push({ file, from: rename.from.path, similarity: rename.score, parsed: parseUnified(patch) });
	}
	return entries;
}

const joined = (lines: readonly string[]) => (lines.length === 0 ? "" : `${lines.join("\n")}\n`);
