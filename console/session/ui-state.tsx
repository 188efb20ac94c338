import { useEffect, useState } from "preact/hooks";
import { get, seg } from "../api/client.ts";
import type { UiState } from "../api/types.ts";

const everyMs = 1500;

/**
 * The extensions' fire-and-forget UI (title, statuses, widgets), re-read as events arrive. Their
 * notifications ("Allowed: …") are the transcript's, each where it was said (reducer.ts).
 */
export function UiPanel({ id, at }: { id: string; at: number }) {
	const [ui, setUi] = useState<UiState>();
	const [readAt, setReadAt] = useState(-Infinity);
	useEffect(() => {
		// At most once per interval, however fast events arrive.
		const wait = Math.max(0, readAt + everyMs - Date.now());
		const timer = setTimeout(() => {
			setReadAt(Date.now());
			get<UiState>(`/v1/sessions/${seg(id)}/ui`)
				.then(setUi)
				.catch(() => {});
		}, wait);
		return () => clearTimeout(timer);
	}, [id, at]);
	if (!ui) return null;
	const statuses = Object.entries(ui.statuses);
	const widgets = Object.entries(ui.widgets);
	if (!ui.title && statuses.length === 0 && widgets.length === 0) return null;
	return (
		<aside class="ui card" aria-label="Extension status">
			{ui.title && <p class="ui-title">{ui.title}</p>}
			{statuses.map(([key, text]) => (
				<p key={key} class="meta">
					{key}: {text}
				</p>
			))}
			{widgets.map(([key, w]) => (
				<pre key={key}>{w.lines.join("\n")}</pre>
			))}
		</aside>
	);
}
