import type { Logger } from "pino";
import type { Config } from "../config/config.ts";
import type { StoredSession } from "../sessions/registry/index.ts";
import type { FolderRestoreReport, Session } from "../sessions/session/index.ts";
import { restoreFolder } from "../workspace/folder-restore.ts";
import { displayPath } from "../workspace/folder-scan.ts";
import { placeFolder, realRoot } from "./folder-home.ts";
import { emit, type Held, heldOf, maxNamed } from "./folder-manifest.ts";
import type { FolderStore, StoredFolder } from "./folder-store.ts";

/** A session taken over: the record with the folder it works in here, what was restored, and what this node now holds of it. */
export interface Adopted {
	record: StoredSession;
	/** Undefined when nothing was restored (an operator's shared folder, there already). */
	report?: FolderRestoreReport;
	held?: Held;
}

/**
 * The folder of a session this node takes over from another: placed under this node's workspace
 * root (folder-home.ts) and restored there from the stored copy before pi starts. Never throws: a
 * folder that cannot be restored in full is a report naming what is missing, not a failed claim.
 */
export async function adoptFolder(
	config: Config,
	store: FolderStore,
	record: StoredSession,
	logger: Logger,
): Promise<Adopted> {
	const started = Date.now();
	let stored: StoredFolder | undefined;
	let loadError: string | undefined;
	try {
		stored = await store.load(record.id);
	} catch (error) {
		loadError = (error as Error).message;
	}
	const placement = placeFolder(config, record, stored?.state);
	const placed = { ...record, cwd: placement.cwd };
	if (!placement.restore && !placement.refused)
		return { record: placed, held: stored && heldOf(stored.state, stored.entries) };
	const report: FolderRestoreReport = {
		complete: true,
		at: new Date().toISOString(),
		from: stored?.state.node ?? null,
		restored: 0,
		missing: [],
		missingCount: 0,
		kept: [],
		detail: null,
	};
	const incomplete = (detail: string, missing: string[] = [], count = missing.length) => {
		report.complete = false;
		report.detail = report.detail ? `${report.detail}; ${detail}` : detail;
		report.missing.push(...missing.slice(0, maxNamed - report.missing.length));
		report.missingCount += count;
	};
	if (placement.refused) incomplete(`${placement.refused}; the session works in a new folder of its own`);
	if (loadError) incomplete(`the stored copy could not be read (${loadError})`);
	else if (!stored && !placement.refused)
		incomplete("no copy of the folder was stored (its node stopped before its first store)");
	let held: Held | undefined;
	try {
		const entries = placement.refused || !stored ? new Map() : stored.entries;
		const result = await restoreFolder(realRoot(config), placement.cwd, entries, {
			overwrite: placement.own,
			fetch: (hashes) => store.fetch(hashes),
		});
		report.restored = result.restored;
		report.kept = result.kept.slice(0, maxNamed);
		if (result.missing.length > 0) {
			const first = result.missing[0]?.why;
			incomplete(
				`${result.missing.length} could not be restored (${first}${result.missing.length > 1 ? ", …" : ""})`,
				result.missing.map((m) => m.path),
			);
		}
		if (stored && !placement.refused) {
			held = heldOf(stored.state, stored.entries);
			held.stats = result.stats;
			const missing = new Set(result.missing.map((m) => m.path));
			for (const path of stored.entries.keys()) if (missing.has(displayPath(path))) held.carry.add(path);
		}
	} catch (error) {
		incomplete(`the folder could not be made (${(error as Error).message})`, [], stored?.entries.size ?? 0);
	}
	const left = stored?.state.omitted;
	if (left && left.count > 0)
		incomplete(
			`${left.count} were left out when it was stored (${left.why ?? "over the cap"})`,
			left.paths,
			left.count,
		);
	else if (left?.why) incomplete(left.why);
	logger.info(
		{
			sessionId: record.id,
			cwd: placement.cwd,
			ms: Date.now() - started,
			...report,
			missing: report.missing.slice(0, 5),
		},
		"session folder restored",
	);
	return { record: placed, report, held };
}

/** The report goes on the session (its view's `folderRestore`), and on its stream when something is missing. */
export function reportFolder(session: Session, report: FolderRestoreReport | undefined): void {
	if (!report) return;
	session.folderRestore = report;
	const { complete, restored, missing, missingCount, detail } = report;
	if (!complete) emit(session, "folder_restore", { complete, restored, missing, missingCount, detail });
}
