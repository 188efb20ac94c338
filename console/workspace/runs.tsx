import { useEffect, useState } from "preact/hooks";
import { get, seg } from "../api/client.ts";
import type { WorkspaceChanges } from "../api/types.ts";
import type { RunRef } from "../session/reducer.ts";
import { Changes, loadReview } from "./changes.tsx";
import { type Counts, defaultRun, runName, wholeSession } from "./run-label.ts";

/** A settled run's counts never change: read once per page. */
const counted = new Map<string, Counts>();

/**
 * The counts of each run that changed files, read one run at a time, newest first (the last 30),
 * so the picker's labels fill in without a burst of requests.
 */
function useCounts(sessionId: string, runs: readonly RunRef[]): Map<string, Counts> {
	const [, setTick] = useState(0);
	useEffect(() => {
		let alive = true;
		const todo = runs
			.filter((r) => r.files.length > 0 && !counted.has(`${sessionId}/${r.runId}`))
			.slice(-30)
			.reverse();
		void (async () => {
			for (const run of todo) {
				if (!alive) return;
				try {
					const c = await get<WorkspaceChanges>(`/v1/sessions/${seg(sessionId)}/changes?runId=${seg(run.runId)}`);
					// Counted as the review shows them (a moved file is one), with its code: loaded for the review anyway.
					const review = await loadReview();
					counted.set(`${sessionId}/${run.runId}`, review.summarize(c.files));
					if (alive) setTick((n) => n + 1);
				} catch {}
			}
		})();
		return () => {
			alive = false;
		};
	}, [sessionId, runs]);
	const known = new Map<string, Counts>();
	for (const r of runs) {
		const c = counted.get(`${sessionId}/${r.runId}`);
		if (c) known.set(r.runId, c);
	}
	return known;
}

/**
 * The Changes tab: a run picker over the review. It opens on the latest run that changed files
 * (a last run that changed nothing would show "No files changed" while the one before changed
 * six), or on the whole session when none did or when `whole` asks for it (the link from an
 * approval's "What the agent changed"); until the person picks, it follows new runs that change files.
 */
export function RunChanges({ id, runs, whole }: { id: string; runs: readonly RunRef[]; whole?: boolean }) {
	const [picked, setPicked] = useState<string | undefined>(whole ? wholeSession : undefined);
	const runId = picked ?? defaultRun(runs);
	const counts = useCounts(id, runs);
	return (
		<section aria-label="Changes" class="changes-view">
			<label class="filter run-picker">
				<span>Changes of</span>
				<select value={runId} onChange={(e) => setPicked(e.currentTarget.value)}>
					<option value={wholeSession}>the whole session</option>
					{runs
						.map((r, i) => (
							<option key={r.runId} value={r.runId}>
								{runName(r, i, counts.get(r.runId))}
							</option>
						))
						.reverse()}
				</select>
			</label>
			<Changes sessionId={id} runId={runId || undefined} />
		</section>
	);
}

/** The link from elsewhere (an approval's "What the agent changed") into a session's review of its whole change. */
export const reviewHref = (sessionId: string) => `#/sessions/${encodeURIComponent(sessionId)}/changes`;
const linkedNow = () => /^#\/sessions\/[^/?#]+\/changes$/.test(location.hash);

/**
 * How many times this page was sent to the review by such a link (0: it was not): the session view
 * shows its Changes tab, on the whole session, each time it changes.
 */
export function useReviewLink(): number {
	const [count, setCount] = useState(() => (linkedNow() ? 1 : 0));
	useEffect(() => {
		const onHash = () => linkedNow() && setCount((n) => n + 1);
		addEventListener("hashchange", onHash);
		return () => removeEventListener("hashchange", onHash);
	}, []);
	return count;
}
