import "../review.css";
import { useEffect, useMemo, useState } from "preact/hooks";
import type { WorkspaceChanges } from "../api/types.ts";
import { FileDiff, type View } from "./file-diff.tsx";
import { principal } from "./read.ts";
import { detectRenames, type Entry } from "./renames.ts";
import { isViewed, setViewed, viewedKey } from "./viewed.ts";

export { CodeFile } from "./code-file.tsx";

/** A run's label's counts as the review shows them: a moved file is one file (runs.tsx). */
export function summarize(files: WorkspaceChanges["files"]): { files: number; added: number; removed: number } {
	const entries = detectRenames(files);
	return {
		files: entries.length,
		added: entries.reduce((n, e) => n + (e.parsed?.added ?? 0), 0),
		removed: entries.reduce((n, e) => n + (e.parsed?.removed ?? 0), 0),
	};
}

/**
 * What changed, read like a pull request's files: a list with each file's added/removed counts and
 * its "Viewed" mark, each a link to its file; then each file's diff in a unified or split view with
 * line numbers on both sides, syntax colours, the changed characters of a changed line marked and
 * the lines between hunks there to open. A moved file is one entry (renames.ts). Large files and
 * binaries start collapsed, viewed ones folded. Loaded only on this view (a chunk of its own).
 */
export function Review({ changes, sessionId }: { changes: WorkspaceChanges; sessionId: string }) {
	const [view, setView] = useState<View>(() => (matchMedia("(min-width: 1100px)").matches ? "split" : "unified"));
	const entries = useMemo(() => detectRenames(changes.files), [changes]);
	const [me, setMe] = useState<string>();
	const [epoch, setEpoch] = useState(0);
	useEffect(() => {
		void principal().then(setMe, () => setMe(""));
	}, []);
	const keyOf = (e: Entry) =>
		me === undefined ? undefined : viewedKey(me, sessionId, e.file.path, `${e.from ?? ""}\n${e.file.diff ?? ""}`);
	// Read again when a mark changes (epoch).
	const viewed = useMemo(
		() => entries.map((e) => (keyOf(e) ? isViewed(keyOf(e) as string) : false)),
		[entries, me, epoch],
	);
	const added = entries.reduce((n, e) => n + (e.parsed?.added ?? 0), 0);
	const removed = entries.reduce((n, e) => n + (e.parsed?.removed ?? 0), 0);
	const seen = viewed.filter(Boolean).length;
	return (
		<div class="review">
			<div class="review-bar">
				<p class="summary">
					{entries.length} file{entries.length === 1 ? "" : "s"} changed <Counts added={added} removed={removed} />
					<span class="muted viewed-count">
						{" "}
						· {seen} of {entries.length} viewed
					</span>
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
					{entries.map((e, i) => (
						<li key={e.file.path} class={viewed[i] ? "is-viewed" : undefined}>
							<a href={`#${anchor(i)}`} onClick={(ev) => jumpTo(ev, anchor(i))}>
								<span class={`status ${e.from ? "renamed" : e.file.status}`}>
									{e.from ? "R" : statusLetter[e.file.status]}
								</span>
								<span class="mono path">{e.from ? `${e.from} → ${e.file.path}` : e.file.path}</span>
								{e.parsed ? (
									<Counts added={e.parsed.added} removed={e.parsed.removed} />
								) : (
									<span class="muted">{e.file.binary ? "binary" : "large"}</span>
								)}
								{viewed[i] && (
									<span class="viewed-mark" title="Viewed">
										✓<span class="sr"> viewed</span>
									</span>
								)}
							</a>
						</li>
					))}
				</ul>
			</nav>
			{entries.map((e, i) => (
				<FileDiff
					key={e.file.path}
					id={anchor(i)}
					entry={e}
					view={view}
					sessionId={sessionId}
					viewed={viewed[i] ?? false}
					onViewed={(v) => {
						const key = keyOf(e);
						if (key) setViewed(key, v);
						setEpoch((n) => n + 1);
					}}
				/>
			))}
			{changes.truncated && <p class="muted">More changed than is listed here.</p>}
		</div>
	);
}

const statusLetter = { added: "A", modified: "M", deleted: "D" } as const;
const anchor = (i: number) => `changed-file-${i}`;

// The page's routes live in the hash: a file is scrolled to and focused, not navigated to.
function jumpTo(e: Event, id: string) {
	e.preventDefault();
	const target = document.getElementById(id);
	target?.scrollIntoView({ block: "start" });
	target?.focus({ preventScroll: true });
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
