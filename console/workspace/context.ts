import type { Line } from "./unified.ts";

/**
 * The unchanged lines a diff leaves out, as gaps a reader opens ("Show 12 lines"): before the
 * first hunk, between hunks and after the last. Numbers are the new side's (`from`..`to`,
 * inclusive), `delta` is new minus old for those lines (the same all along a gap: nothing in it
 * changed). An open gap is drawn as context lines from the file as it is after the change; a
 * closed one as one row with its hunk's header. Pure: test/unit/console-review.test.ts.
 */
export type Gap = { kind: "gap"; id: number; from: number; to?: number; delta: number; header?: string };
export type Row = Line | Gap;

export function withGaps(
	lines: readonly Line[],
	options: { total?: number; open?: ReadonlySet<number>; full?: readonly string[]; trailing?: boolean } = {},
): Row[] {
	const { total, open = new Set(), full } = options;
	const rows: Row[] = [];
	let nextNew = 1;
	let nextOld = 1;
	let id = 0;
	const gap = (to: number | undefined, header?: string) => {
		const g: Gap = { kind: "gap", id: id++, from: nextNew, to, delta: nextNew - nextOld, header };
		if (to !== undefined && to < g.from) return header ? rows.push({ kind: "hunk", text: header }) : undefined;
		if (open.has(g.id) && full) {
			const end = Math.min(to ?? full.length, full.length);
			for (let n = g.from; n <= end; n++)
				rows.push({ kind: "context", text: full[n - 1] as string, old: n - g.delta, new: n });
			return;
		}
		rows.push(g);
	};
	for (let i = 0; i < lines.length; i++) {
		const line = lines[i] as Line;
		if (line.kind !== "hunk") {
			rows.push(line);
			if (line.new !== undefined) nextNew = line.new + 1;
			if (line.old !== undefined) nextOld = line.old + 1;
			continue;
		}
		// Where the hunk's first line is on the new side (a hunk of deletions only: where it would be).
		let first: number | undefined;
		for (let j = i + 1; j < lines.length; j++) {
			const l = lines[j] as Line;
			if (l.kind === "hunk") break;
			if (l.new !== undefined) {
				first = l.new;
				break;
			}
			if (l.old !== undefined) {
				first = l.old + (nextNew - nextOld);
				break;
			}
		}
		gap((first ?? nextNew) - 1, line.text);
	}
	if (options.trailing && (total === undefined || total >= nextNew)) gap(total);
	return rows;
}

/**
 * Whether the diff's last hunk reaches the end of the file: git shows 3 lines of context after the
 * last change, so fewer means the file ended there and nothing is hidden below it.
 */
export function reachesEnd(lines: readonly Line[]): boolean {
	let context = 0;
	for (let i = lines.length - 1; i >= 0 && lines[i]?.kind === "context"; i--) context++;
	return context < 3;
}

/** Whether `full` (the file now) is the file the diff's new side shows: every context and added line in its place. */
export function matchesNewSide(lines: readonly Line[], full: readonly string[]): boolean {
	return lines.every((l) => l.kind === "hunk" || l.new === undefined || full[l.new - 1] === l.text);
}
