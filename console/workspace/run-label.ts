import type { RunRef } from "../session/reducer.ts";

// How the Changes tab (runs.tsx) names and picks runs; pure: test/unit/console-review.test.ts.

/** The whole session, as the run picker's value. */
export const wholeSession = "";

export type Counts = { files: number; added: number; removed: number };

/** A run as people know it: when its prompt was sent, what it said, and what it changed (its id is for programs). */
export function runName(run: RunRef, index: number, counts?: Counts): string {
	const when = run.at
		? new Date(run.at).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
		: `Run ${index + 1}`;
	const prompt = run.prompt?.replace(/\s+/g, " ").trim();
	const said = prompt ? ` · ${prompt.length > 48 ? `${prompt.slice(0, 47)}…` : prompt}` : "";
	const files = counts?.files ?? run.files.length;
	const what =
		files === 0
			? " · no files changed"
			: ` · ${files} file${files === 1 ? "" : "s"}${counts ? ` +${counts.added} −${counts.removed}` : ""}`;
	return `${when}${said}${what}`;
}

/** Where the review opens: the latest run that changed files, else the whole session. */
export function defaultRun(runs: readonly RunRef[]): string {
	return runs.findLast((r) => r.files.length > 0)?.runId ?? wholeSession;
}
