import { useEffect, useState } from "preact/hooks";
import { get, seg } from "../api/client.ts";
import type { WorkspaceChanges } from "../api/types.ts";
import { Diff } from "./diff.tsx";

/** What changed in the session's folder: since it started, or in one run. */
export function Changes({ sessionId, runId }: { sessionId: string; runId?: string }) {
	const [changes, setChanges] = useState<WorkspaceChanges>();
	const [error, setError] = useState<string>();
	useEffect(() => {
		const query = runId ? `?runId=${seg(runId)}` : "";
		get<WorkspaceChanges>(`/v1/sessions/${seg(sessionId)}/changes${query}`)
			.then(setChanges)
			.catch((e: Error) => setError(e.message));
	}, [sessionId, runId]);
	if (error) return <p class="muted">{error}</p>;
	if (!changes) return <p class="muted">Loading…</p>;
	if (changes.files.length === 0) return <p class="muted">No files changed.</p>;
	return (
		<ul class="plain">
			{changes.files.map((file) => (
				<li key={file.path}>
					<details open={changes.files.length <= 3}>
						<summary>
							<span class={`badge ${file.status === "deleted" ? "bad" : "ok"}`}>{file.status}</span>{" "}
							<code>{file.path}</code>
						</summary>
						{file.diff ? (
							<Diff text={file.diff} />
						) : (
							<p class="muted">{file.binary ? "Binary file" : "Diff left out (too large)"}</p>
						)}
					</details>
				</li>
			))}
			{changes.truncated && <li class="muted">More changed than is listed.</li>}
		</ul>
	);
}
