import { diffWordsWithSpace } from "diff";
import type { Line } from "./unified.ts";

/**
 * What changed inside a changed line: a deleted line and the added line that replaced it (the
 * n-th deletion of a run with the n-th addition after it, as the split view pairs them) are
 * compared word by word (jsdiff's diffWordsWithSpace: words, punctuation and runs of spaces), and
 * each side gets the ranges of its own text that the other does not have. Not marked when the two
 * lines share too little (a rewritten line is all new: marking every word helps nobody) or are
 * long (the comparison is quadratic). Pure: test/unit/console-review.test.ts.
 */
export type Ranges = readonly (readonly [number, number])[];

const maxLength = 500;
/** Below this share of unchanged characters, the line counts as rewritten and nothing is marked. */
const minShared = 0.4;

export function lineRanges(before: string, after: string): { old: Ranges; new: Ranges } | undefined {
	if (before === after || before.length > maxLength || after.length > maxLength) return undefined;
	const oldRanges: [number, number][] = [];
	const newRanges: [number, number][] = [];
	let o = 0;
	let n = 0;
	let shared = 0;
	for (const part of diffWordsWithSpace(before, after)) {
		const len = part.value.length;
		if (part.added) {
			newRanges.push([n, n + len]);
			n += len;
		} else if (part.removed) {
			oldRanges.push([o, o + len]);
			o += len;
		} else {
			o += len;
			n += len;
			shared += len;
		}
	}
	if (shared < minShared * Math.max(before.length, after.length)) return undefined;
	return { old: oldRanges, new: newRanges };
}

/** The marked ranges of every changed line that has a counterpart, by its index in `lines`. */
export function intraline(lines: readonly Line[]): Map<number, Ranges> {
	const marks = new Map<number, Ranges>();
	let dels: number[] = [];
	let adds: number[] = [];
	const flush = () => {
		for (let i = 0; i < Math.min(dels.length, adds.length); i++) {
			const d = dels[i] as number;
			const a = adds[i] as number;
			const ranges = lineRanges((lines[d] as Line).text, (lines[a] as Line).text);
			if (!ranges) continue;
			marks.set(d, ranges.old);
			marks.set(a, ranges.new);
		}
		dels = [];
		adds = [];
	};
	lines.forEach((line, i) => {
		if (line.kind === "del") {
			if (adds.length > 0) flush();
			dels.push(i);
		} else if (line.kind === "add") adds.push(i);
		else flush();
	});
	flush();
	return marks;
}
