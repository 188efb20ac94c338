import { useMemo, useState } from "preact/hooks";
import type { WorkspaceChanges, WorkspaceFileChange } from "../api/types.ts";
import { Code, languageOf } from "./highlight.tsx";
import { type Line, parseUnified, type Side, splitRows } from "./unified.ts";

/** A file whose diff has more lines than this starts collapsed ("Show diff"). */
const largeLines = 400;

type View = "unified" | "split";

/**
 * What changed, read like a pull request's files: a list with each file's added/removed counts,
 * then each file's diff in a unified or split view with line numbers on both sides and syntax
 * colours. Large files and binaries start collapsed. Loaded only on this view (a chunk of its own).
 */
export function Review({ changes }: { changes: WorkspaceChanges }) {
	const [view, setView] = useState<View>(() => (matchMedia("(min-width: 1100px)").matches ? "split" : "unified"));
	const files = useMemo(
		() => changes.files.map((file) => ({ file, parsed: file.diff ? parseUnified(file.diff) : undefined })),
		[changes],
	);
	const added = files.reduce((n, f) => n + (f.parsed?.added ?? 0), 0);
	const removed = files.reduce((n, f) => n + (f.parsed?.removed ?? 0), 0);
	return (
		<div class="review">
			<div class="review-bar">
				<p class="summary">
					{files.length} file{files.length === 1 ? "" : "s"} changed <Counts added={added} removed={removed} />
				</p>
				<fieldset class="segmented">
					<legend class="sr">Diff view</legend>
					{(["unified", "split"] as const).map((v) => (
						<button type="button" key={v} aria-pressed={view === v} onClick={() => setView(v)}>
							{v === "unified" ? "Unified" : "Split"}
						</button>
					))}
				</fieldset>
			</div>
			<nav aria-label="Changed files">
				<ul class="plain file-list">
					{files.map(({ file, parsed }, i) => (
						<li key={file.path}>
							<a href={`#${anchor(i)}`} onClick={(e) => jumpTo(e, anchor(i))}>
								<span class={`status ${file.status}`}>{statusLetter[file.status]}</span>
								<span class="mono path">{file.path}</span>
								{parsed ? (
									<Counts added={parsed.added} removed={parsed.removed} />
								) : (
									<span class="muted">{file.binary ? "binary" : "large"}</span>
								)}
							</a>
						</li>
					))}
				</ul>
			</nav>
			{files.map(({ file, parsed }, i) => (
				<FileDiff key={file.path} id={anchor(i)} file={file} lines={parsed?.lines} view={view} />
			))}
			{changes.truncated && <p class="muted">More changed than is listed here.</p>}
		</div>
	);
}

const statusLetter = { added: "A", modified: "M", deleted: "D" } as const;
const anchor = (i: number) => `changed-file-${i}`;

// The page's routes live in the hash: a file is scrolled to, not navigated to.
function jumpTo(e: Event, id: string) {
	e.preventDefault();
	document.getElementById(id)?.scrollIntoView({ block: "start" });
}

function Counts({ added, removed }: { added: number; removed: number }) {
	return (
		<span class="counts">
			<span class="plus">+{added}</span> <span class="minus">−{removed}</span>
			<span class="sr">
				{" "}
				({added} added, {removed} removed lines)
			</span>
		</span>
	);
}

function FileDiff(props: { id: string; file: WorkspaceFileChange; lines?: Line[]; view: View }) {
	const { file, lines } = props;
	const large = (lines?.length ?? 0) > largeLines;
	const [open, setOpen] = useState(!large);
	const language = languageOf(file.path);
	return (
		<section class="file-diff" id={props.id} aria-label={`Changes to ${file.path}`}>
			<header class="file-head">
				<span class={`status ${file.status}`}>{file.status}</span>
				<span class="mono path">{file.path}</span>
				{lines && large && (
					<button type="button" class="small" aria-expanded={open} onClick={() => setOpen(!open)}>
						{open ? "Hide diff" : `Show diff (${lines.length} lines)`}
					</button>
				)}
			</header>
			{!lines ? (
				<p class="muted collapsed">
					{file.binary ? "Binary file: not shown." : "Diff left out: larger than the gateway shows."}
				</p>
			) : !open ? (
				<p class="muted collapsed">Large diff, collapsed.</p>
			) : props.view === "unified" ? (
				<Unified lines={lines} language={language} path={file.path} />
			) : (
				<Split lines={lines} language={language} path={file.path} />
			)}
		</section>
	);
}

const sign = { add: "+", del: "-", context: " " } as const;

function Unified({ lines, language, path }: { lines: Line[]; language?: string; path: string }) {
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
					{lines.map((line, i) =>
						line.kind === "hunk" ? (
							<tr key={i} class="hunk">
								<td colSpan={3}>{line.text}</td>
							</tr>
						) : (
							<tr key={i} class={line.kind}>
								<td class="ln">{line.old ?? ""}</td>
								<td class="ln">{line.new ?? ""}</td>
								<td class="code">
									<span class="sign">{sign[line.kind]}</span>
									<Code text={line.text} language={language} />
								</td>
							</tr>
						),
					)}
				</tbody>
			</table>
		</div>
	);
}

function Split({ lines, language, path }: { lines: Line[]; language?: string; path: string }) {
	const rows = useMemo(() => splitRows(lines), [lines]);
	const half = (side: Side, which: "old" | "new") => {
		if (!side) return [<td key="n" class="ln empty" />, <td key="c" class="code empty" />];
		const kind = side.kind === "context" ? "context" : side.kind;
		return [
			<td key="n" class={`ln ${kind}`}>
				{side[which] ?? ""}
			</td>,
			<td key="c" class={`code ${kind}`}>
				<span class="sign">{sign[side.kind]}</span>
				<Code text={side.text} language={language} />
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
					{rows.map((row, i) =>
						row.kind === "hunk" ? (
							<tr key={i} class="hunk">
								<td colSpan={4}>{row.text}</td>
							</tr>
						) : (
							<tr key={i}>
								{half(row.left, "old")}
								{half(row.right, "new")}
							</tr>
						),
					)}
				</tbody>
			</table>
		</div>
	);
}
