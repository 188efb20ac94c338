import { useEffect, useState } from "preact/hooks";
import { call, get, seg } from "../api/client.ts";
import type { WorkspaceListing } from "../api/types.ts";

const maxPreview = 200_000;

/** The session's folder: browse folders, read a file as text. */
export function Files({ sessionId }: { sessionId: string }) {
	const [path, setPath] = useState("");
	const [listing, setListing] = useState<WorkspaceListing>();
	const [file, setFile] = useState<{ path: string; text: string }>();
	const [error, setError] = useState<string>();
	useEffect(() => {
		setError(undefined);
		get<WorkspaceListing>(`/v1/sessions/${seg(sessionId)}/files?path=${seg(path)}`)
			.then(setListing)
			.catch((e: Error) => setError(e.message));
	}, [sessionId, path]);
	const open = async (filePath: string) => {
		try {
			const text = await call<string>("GET", `/v1/sessions/${seg(sessionId)}/files/content?path=${seg(filePath)}`);
			const shown = typeof text === "string" ? text : JSON.stringify(text, null, 2);
			setFile({ path: filePath, text: shown.length > maxPreview ? `${shown.slice(0, maxPreview)}\n…` : shown });
		} catch (e) {
			setError((e as Error).message);
		}
	};
	const parent = path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "";
	return (
		<div class="files">
			<p class="meta">
				Folder <code>/{path}</code>
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
				{listing?.entries.map((entry) => (
					<li key={entry.path}>
						{entry.type === "dir" ? (
							<button type="button" class="link" onClick={() => setPath(entry.path)}>
								{entry.name}/
							</button>
						) : entry.type === "file" ? (
							<button type="button" class="link" onClick={() => open(entry.path)}>
								{entry.name}
							</button>
						) : (
							<span>{entry.name}</span>
						)}{" "}
						<span class="muted">{entry.type === "file" ? `${entry.size} B` : entry.type}</span>
					</li>
				))}
				{listing && listing.entries.length === 0 && <li class="muted">Empty folder.</li>}
			</ul>
			{file && (
				<figure>
					<figcaption>
						<code>{file.path}</code>
					</figcaption>
					<pre class="file">{file.text}</pre>
				</figure>
			)}
		</div>
	);
}
