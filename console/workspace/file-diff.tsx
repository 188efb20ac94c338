import { useMemo, useState } from "preact/hooks";
import { type Gap, matchesNewSide, type Row, reachesEnd, withGaps } from "./context.ts";
import { Code, languageOf } from "./highlight.tsx";
import { intraline, type Ranges } from "./intraline.ts";
import { readText } from "./read.ts";
import type { Entry } from "./renames.ts";
import { type Line, type Side, splitRows } from "./unified.ts";

/** A file whose diff has more lines than this starts collapsed ("Show diff"). */
const largeLines = 400;

export type View = "unified" | "split";

/** What a file is read as, for the gaps between hunks: not yet, its lines, or not the diff's version any more. */
type Full = undefined | "loading" | "stale" | readonly string[];

/**
 * One file of the review: its header (status, path or old → new path, the "Viewed" check) and its
 * diff, unified or split, with the changed characters of a changed line marked and the unchanged
 * lines between hunks there to open (read from the file as it is now, and only when it is still
 * the version the diff ends at: a later run may have changed it).
 */
export function FileDiff(props: {
	id: string;
	entry: Entry;
	view: View;
	sessionId: string;
	viewed: boolean;
	onViewed: (viewed: boolean) => void;
}) {
	const { entry, viewed } = props;
	const { file, parsed } = entry;
	const lines = parsed?.lines;
	const large = (lines?.length ?? 0) > largeLines;
	const [open, setOpen] = useState(!large);
	const [gapsOpen, setGapsOpen] = useState<ReadonlySet<number>>(new Set());
	const [full, setFull] = useState<Full>();
	const language = languageOf(file.path);
	// Only a file that is there before and after has lines the diff leaves out.
	const expandable = (file.status === "modified" || entry.from !== undefined) && (lines?.length ?? 0) > 0;
	const rows = useMemo(
		() =>
			lines && expandable
				? withGaps(lines, {
						open: gapsOpen,
						full: Array.isArray(full) ? full : undefined,
						total: Array.isArray(full) ? full.length : undefined,
						trailing: !reachesEnd(lines),
					})
				: (lines ?? []),
		[lines, expandable, gapsOpen, full],
	);
	const marks = useMemo(() => {
		const byIndex = intraline(lines ?? []);
		return new Map<Line, Ranges>([...byIndex].map(([i, r]) => [(lines as Line[])[i] as Line, r]));
	}, [lines]);
	const openGap = async (gap: Gap) => {
		let lines_ = full;
		if (lines_ === undefined) {
			setFull("loading");
			const text = await readText(props.sessionId, file.path);
			const split = text?.split("\n");
			if (split && text?.endsWith("\n")) split.pop();
			lines_ = split && matchesNewSide(lines ?? [], split) ? split : "stale";
			setFull(lines_);
		}
		if (Array.isArray(lines_)) setGapsOpen(new Set([...gapsOpen, gap.id]));
	};
	const shown = lines && open && !viewed;
	const label = entry.from ? `${entry.from} → ${file.path}` : file.path;
	return (
		<section class="file-diff" id={props.id} aria-label={`Changes to ${file.path}`} tabIndex={-1}>
			<header class="file-head">
				<span class={`status ${entry.from ? "renamed" : file.status}`}>{entry.from ? "renamed" : file.status}</span>
				<span class="mono path">{label}</span>
				{entry.from && entry.similarity !== undefined && entry.similarity < 100 && (
					<span class="muted">{entry.similarity}% the same</span>
				)}
				{lines && large && !viewed && (
					<button type="button" class="small" aria-expanded={open} onClick={() => setOpen(!open)}>
						{open ? "Hide diff" : `Show diff (${lines.length} lines)`}
					</button>
				)}
				<label class="viewed">
					<input
						type="checkbox"
						checked={viewed}
						onChange={(e) => props.onViewed(e.currentTarget.checked)}
						aria-label={`Viewed ${file.path}`}
					/>
					Viewed
				</label>
			</header>
			{viewed ? null : !lines ? (
				<p class="muted collapsed">
					{file.binary ? "Binary file: not shown." : "Diff left out: larger than the gateway shows."}
				</p>
			) : lines.length === 0 ? (
				<p class="muted collapsed">Moved without changes.</p>
			) : !shown ? (
				<p class="muted collapsed">Large diff, collapsed.</p>
			) : (
				<>
					{full === "stale" && (
						<p class="muted collapsed">
							The file has changed since: the lines between the changes are not shown for this run.
						</p>
					)}
					{props.view === "unified" ? (
						<Unified rows={rows} marks={marks} language={language} path={file.path} onGap={openGap} />
					) : (
						<Split rows={rows} marks={marks} language={language} path={file.path} onGap={openGap} />
					)}
				</>
			)}
		</section>
	);
}

const sign = { add: "+", del: "-", context: " " } as const;

type TableProps = {
	rows: Row[];
	marks: Map<Line, Ranges>;
	language?: string;
	path: string;
	onGap: (gap: Gap) => void;
};

/** A hunk's header, or a gap of hidden lines with the button that shows them. */
function Separator({ row, span, onGap }: { row: Row; span: number; onGap: (gap: Gap) => void }) {
	if (row.kind === "gap") {
		const count = row.to === undefined ? undefined : row.to - row.from + 1;
		return (
			<tr class="hunk gap">
				<td colSpan={span}>
					<button type="button" class="expand" onClick={() => onGap(row)}>
						{count === undefined ? "Show the rest of the file" : `Show ${count} hidden line${count === 1 ? "" : "s"}`}
					</button>
					{row.header && <span class="hunk-text">{row.header}</span>}
				</td>
			</tr>
		);
	}
	return (
		<tr class="hunk">
			<td colSpan={span}>{row.kind === "hunk" ? row.text : ""}</td>
		</tr>
	);
}

function Unified({ rows, marks, language, path, onGap }: TableProps) {
	return (
		<div class="diff-scroll">
			<table class="diff unified" aria-label={`Unified diff of ${path}`}>
				<colgroup>
					<col class="ln-col" />
					<col class="ln-col" />
					<col />
				</colgroup>
				<thead class="sr">
					<tr>
						<th scope="col">Old line</th>
						<th scope="col">New line</th>
						<th scope="col">Line</th>
					</tr>
				</thead>
				<tbody>
					{rows.map((line, i) =>
						line.kind === "hunk" || line.kind === "gap" ? (
							<Separator key={i} row={line} span={3} onGap={onGap} />
						) : (
							<tr key={i} class={line.kind}>
								<td class="ln">{line.old ?? ""}</td>
								<td class="ln">{line.new ?? ""}</td>
								<td class="code">
									<span class="sign">{sign[line.kind]}</span>
									<Code text={line.text} language={language} marks={marks.get(line)} />
								</td>
							</tr>
						),
					)}
				</tbody>
			</table>
		</div>
	);
}

function Split({ rows, marks, language, path, onGap }: TableProps) {
	const pairs = useMemo(() => splitRows(rows), [rows]);
	const half = (side: Side, which: "old" | "new") => {
		if (!side) return [<td key="n" class="ln empty" />, <td key="c" class="code empty" />];
		return [
			<td key="n" class={`ln ${side.kind}`}>
				{side[which] ?? ""}
			</td>,
			<td key="c" class={`code ${side.kind}`}>
				<span class="sign">{sign[side.kind]}</span>
				<Code text={side.text} language={language} marks={marks.get(side)} />
			</td>,
		];
	};
	return (
		<div class="diff-scroll">
			<table class="diff split" aria-label={`Split diff of ${path}`}>
				<colgroup>
					<col class="ln-col" />
					<col />
					<col class="ln-col" />
					<col />
				</colgroup>
				<thead class="sr">
					<tr>
						<th scope="col">Old line</th>
						<th scope="col">Before</th>
						<th scope="col">New line</th>
						<th scope="col">After</th>
					</tr>
				</thead>
				<tbody>
					{pairs.map((row, i) =>
						row.kind === "pair" ? (
							<tr key={i}>
								{half(row.left, "old")}
								{half(row.right, "new")}
							</tr>
						) : (
							<Separator key={i} row={row} span={4} onGap={onGap} />
						),
					)}
				</tbody>
			</table>
		</div>
	);
}
