import { mkdirSync } from "node:fs";
import type { Config } from "../../config/config.ts";
import { isInside } from "../../shared/paths.ts";
import { localSessionFile } from "../process/session-files.ts";
import type { Session, SessionInit } from "../session/session.ts";
import type { UncleanStop } from "../session/session-types.ts";
import type { StoredSession } from "./session-store.ts";

/** A stored session a node takes over: how far its event numbers may have gone, and its dead dialogs. */
export interface Takeover {
	/** The previous owner released it (its last seq is exact); else numbers skip a margin. */
	clean: boolean;
}

/** What an unclean stop left of a stored session: whether its pi process and its run died then. */
const uncleanStop = (record: StoredSession, why: string): UncleanStop => ({
	why,
	live: record.live === true,
	...(record.runId !== undefined && { runId: record.runId }),
});

/**
 * A record of the previous run, brought back as `stopped` at start-up: after an unclean stop
 * (`margin` > 0) its event numbers skip the margin, since the last ones written may be behind.
 */
export function restoredAtStart(record: StoredSession, margin: number): NonNullable<SessionInit["restored"]> {
	return {
		createdAt: new Date(record.createdAt),
		lastActivityAt: record.lastActivityAt,
		lastSeq: record.lastSeq + margin,
		piState: record.piState,
		unclean: margin > 0 ? uncleanStop(record, "the gateway stopped uncleanly (SIGKILL, a crash)") : undefined,
	};
}

/**
 * A record another node wrote (cluster mode), taken over as `stopped`: its pi session file is
 * looked for under this node's data dir, and its folder made when it lies in the workspace root.
 */
export function restoredByTakeover(
	config: Config,
	record: StoredSession,
	takeover: Takeover,
	margin: number,
): NonNullable<SessionInit["restored"]> {
	const piState = { ...record.piState };
	if (piState.sessionFile) piState.sessionFile = localSessionFile(config, piState.sessionFile);
	if (isInside(config.workspaceRoot, record.cwd)) mkdirSync(record.cwd, { recursive: true });
	return {
		createdAt: new Date(record.createdAt),
		lastActivityAt: record.lastActivityAt,
		lastSeq: record.lastSeq + (takeover.clean ? 0 : margin),
		piState,
		unclean: takeover.clean ? undefined : uncleanStop(record, "the node that ran the session died"),
	};
}

/** What the record carries besides the session's own state: its budget, and (after a dead owner) the dialogs that died. */
export function restoreKept(session: Session, record: StoredSession, takeover?: Takeover): void {
	if (record.budget) session.budget.restore(record.budget);
	if (!takeover || takeover.clean) return;
	if (record.pendingApprovals) session.approvals.markLost(record.pendingApprovals);
	if (record.pendingToolCalls) session.toolCalls.markLost(record.pendingToolCalls);
}
