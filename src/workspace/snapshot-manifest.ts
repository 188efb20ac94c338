import { objectId } from "./git.ts";

/** What a session's shadow repository remembers: the tree at its start and at each run's start and end. */
export interface Manifest {
	base?: string;
	/** `error`: a run whose snapshots --workspace-max-snapshot-bytes refused (no trees). */
	runs: {
		runId: string;
		start?: string;
		end?: string;
		settledAt?: string;
		error?: string;
		/** Files git could not read at the run's end (their edits are not in its changes). */
		unreadable?: string[];
	}[];
}

/**
 * What a snapshot says it could not read, kept small (it goes into every run's record and event):
 * at most 100 paths and 16 KiB of them, tracked files first (an edit hidden is what matters; new
 * files an agent makes by the hundred cannot push those out).
 */
export function boundedUnreadable(paths: string[]): string[] {
	const kept: string[] = [];
	let bytes = 0;
	for (const path of paths) {
		bytes += path.length;
		if (kept.length === 100 || bytes > 16 * 1024) break;
		kept.push(path);
	}
	return kept;
}

/** Runs remembered per session (the oldest go first; their trees go at the next prune). */
export const maxRuns = 100;

/**
 * The manifest as read back from disk, keeping only what has the shape it was written with: a
 * tree that is not an object id is dropped (its run then has no changes to show: 404
 * run_not_found), so nothing in the file becomes a git argument or throws on use.
 */
export function checkedManifest(parsed: unknown): Manifest {
	const tree = (value: unknown) => (typeof value === "string" && objectId.test(value) ? value : undefined);
	const text = (value: unknown) => (typeof value === "string" ? value : undefined);
	const record = (value: unknown) =>
		value !== null && typeof value === "object" && !Array.isArray(value)
			? (value as Record<string, unknown>)
			: undefined;
	const file = record(parsed);
	const runs: Manifest["runs"] = [];
	for (const entry of Array.isArray(file?.runs) ? file.runs : []) {
		const run = record(entry);
		const runId = text(run?.runId);
		if (!run || !runId) continue;
		const fields = {
			start: tree(run.start),
			end: tree(run.end),
			settledAt: text(run.settledAt),
			error: text(run.error),
			unreadable: Array.isArray(run.unreadable)
				? boundedUnreadable(run.unreadable.filter((path): path is string => typeof path === "string"))
				: undefined,
		};
		runs.push({ runId, ...Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) });
	}
	const base = tree(file?.base);
	return base ? { base, runs } : { runs };
}
