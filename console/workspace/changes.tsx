import { useEffect, useState } from "preact/hooks";
import { get, seg } from "../api/client.ts";
import type { WorkspaceChanges } from "../api/types.ts";

export type ReviewModule = typeof import("./review.tsx");
/**
 * The review (diff views, the highlighter and its grammars) is a chunk of its own, fetched the
 * first time changes are shown or a file is opened in the Files view.
 */
let loading: Promise<ReviewModule> | undefined;
export const loadReview = () => {
	loading ??= import("./review.tsx").catch((e) => {
		loading = undefined;
		throw e;
	});
	return loading;
};

/** What changed in the session's folder: since it started, or in one run. */
export function Changes({ sessionId, runId }: { sessionId: string; runId?: string }) {
	const [changes, setChanges] = useState<WorkspaceChanges>();
	const [review, setReview] = useState<ReviewModule>();
	const [error, setError] = useState<string>();
	useEffect(() => {
		setChanges(undefined);
		setError(undefined);
		// An answer for a run no longer chosen (a slower, earlier ask) must not replace the chosen one's.
		let current = true;
		const query = runId ? `?runId=${seg(runId)}` : "";
		get<WorkspaceChanges>(`/v1/sessions/${seg(sessionId)}/changes${query}`)
			.then((c) => {
				if (!current) return;
				setChanges(c);
				if (c.files.length > 0) return loadReview().then(setReview);
			})
			.catch((e: Error) => current && setError(e.message));
		return () => {
			current = false;
		};
	}, [sessionId, runId]);
	if (error) return <p class="muted">{error}</p>;
	if (!changes) return <p class="muted">Loading…</p>;
	const unread = <Unreadable paths={changes.unreadable} />;
	if (changes.files.length === 0)
		return (
			<>
				{unread}
				<p class="muted">No files changed.</p>
			</>
		);
	if (!review) return <p class="muted">Loading the review…</p>;
	return (
		<>
			{unread}
			<review.Review changes={changes} sessionId={sessionId} />
		</>
	);
}

/** Files git could not read for the snapshot (made mode 000, say): an edit to them is not shown. */
function Unreadable({ paths }: { paths?: readonly string[] }) {
	if (!paths || paths.length === 0) return null;
	return (
		<p class="unreadable" role="alert">
			Not read, so any edit to them is not shown: {paths.join(", ")}
		</p>
	);
}
