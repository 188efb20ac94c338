import { useEffect, useMemo, useState } from "preact/hooks";
import { get, seg } from "../api/client.ts";
import type { WorkspaceChanges, WorkspaceListing } from "../api/types.ts";
import { loadReview, type ReviewModule } from "./changes.tsx";
import { readText } from "./read.ts";

const maxPreview = 200_000;

type Change = WorkspaceChanges["files"][number];
const letter = { added: "A", modified: "M", deleted: "D" } as const;
const parentOf = (p: string) => (p.includes("/") ? p.slice(0, p.lastIndexOf("/")) : "");

/**
 * The session's folder: browse folders, read a file as code (numbered lines, syntax colours, the
 * lines the session added marked), with what the session changed marked in each listing: a file's
 * A or M, a folder that holds changes, and the files it deleted there, struck through.
 */
export function Files({ sessionId }: { sessionId: string }) {
	const [path, setPath] = useState("");
	const [listing, setListing] = useState<WorkspaceListing>();
	const [file, setFile] = useState<{ path: string; text: string }>();
	const [error, setError] = useState<string>();
	const [changes, setChanges] = useState<readonly Change[]>([]);
	const [review, setReview] = useState<ReviewModule>();
	useEffect(() => {
		setError(undefined);
		get<WorkspaceListing>(`/v1/sessions/${seg(sessionId)}/files?path=${seg(path)}`)
			.then(setListing)
			.catch((e: Error) => setError(e.message));
	}, [sessionId, path]);
	// What the session changed since it started (tracking may be off: then nothing is marked).
	useEffect(() => {
		get<WorkspaceChanges>(`/v1/sessions/${seg(sessionId)}/changes`)
			.then((c) => setChanges(c.files))
			.catch(() => setChanges([]));
	}, [sessionId]);
	const byPath = useMemo(() => new Map(changes.map((c) => [c.path, c])), [changes]);
	const changedUnder = (dir: string) => changes.some((c) => c.path.startsWith(`${dir}/`));
	const deletedHere = changes.filter((c) => c.status === "deleted" && parentOf(c.path) === path);
	const open = async (filePath: string) => {
		const text = await readText(sessionId, filePath);
		if (text === undefined) return setError(`${filePath} could not be read.`);
		setFile({ path: filePath, text: text.length > maxPreview ? `${text.slice(0, maxPreview)}\n…` : text });
		loadReview().then(setReview, () => {});
	};
	const parent = parentOf(path);
	return (
		<div class="files">
			<p class="meta">
				Folder <code>/{path}</code>
				{changes.length > 0 && <span class="muted"> · A added, M modified since the session started</span>}
			</p>
			{error && <p class="error">{error}</p>}
			<ul class="plain entries">
				{path && (
					<li>
						<button type="button" class="link" onClick={() => setPath(parent)}>
							.. (up)
						</button>
					</li>
				)}
				{listing?.entries.map((entry) => {
					const change = entry.type === "file" ? byPath.get(entry.path) : undefined;
					const mark = change ? (
						<span class={`status ${change.status}`} title={change.status}>
							{letter[change.status]}
						</span>
					) : entry.type === "dir" && changedUnder(entry.path) ? (
						<span class="status modified" title="holds changes">
							•
						</span>
					) : (
						<span class="status" aria-hidden="true" />
					);
					return (
						<li key={entry.path} class="entry">
							{mark}
							{entry.type === "dir" ? (
								<button type="button" class="link" onClick={() => setPath(entry.path)}>
									{entry.name}/
								</button>
							) : entry.type === "file" ? (
								<button
									type="button"
									class="link"
									onClick={() => open(entry.path)}
									aria-label={change ? `${entry.name} (${change.status})` : undefined}
								>
									{entry.name}
								</button>
							) : (
								<span>{entry.name}</span>
							)}{" "}
							<span class="muted">{entry.type === "file" ? `${entry.size} B` : entry.type}</span>
						</li>
					);
				})}
				{deletedHere.map((c) => (
					<li key={c.path} class="entry deleted-entry">
						<span class="status deleted">D</span>
						<del>{c.path.slice(c.path.lastIndexOf("/") + 1)}</del> <span class="muted">deleted</span>
					</li>
				))}
				{listing && listing.entries.length === 0 && deletedHere.length === 0 && <li class="muted">Empty folder.</li>}
			</ul>
			{file && (
				<figure class="file-view">
					<figcaption>
						<code>{file.path}</code>
						{byPath.get(file.path) && <span class="muted"> · {byPath.get(file.path)?.status} in this session</span>}
					</figcaption>
					{review ? (
						<review.CodeFile
							path={file.path}
							text={file.text}
							// The lines changed in a file that was there before (in a new one, every line is).
							diff={byPath.get(file.path)?.status === "modified" ? byPath.get(file.path)?.diff : undefined}
						/>
					) : (
						<pre class="file">{file.text}</pre>
					)}
				</figure>
			)}
		</div>
	);
}
