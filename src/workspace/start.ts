import type { Logger } from "pino";
import type { Config } from "../config/config.ts";
import { gatesSnapshots } from "../sessions/process/index.ts";
import type { SessionRegistry } from "../sessions/registry/index.ts";
import { confinementOf } from "./confined.ts";
import type { RunArchive } from "./run-archive.ts";
import { isSnapshotGate } from "./snapshot-gate.ts";
import { warmToolThread } from "./tool-spawner.ts";
import { ChangeTracker } from "./tracker.ts";

/**
 * The one hook point into the registry (as webhooks/start.ts): workspace snapshots fed by every
 * session's events, and `run_changes` written to the session's own stream.
 */
export function startChangeTracker(
	config: Config,
	registry: SessionRegistry,
	logger: Logger,
	archive?: RunArchive,
): ChangeTracker {
	const tracker = new ChangeTracker(
		{
			dataDir: config.dataDir,
			enabled: config.workspaceChanges,
			snapshotTimeoutMs: config.workspaceSnapshotTimeoutMs,
			maxSnapshotBytes: config.workspaceMaxSnapshotBytes,
			limits: {
				maxFiles: config.workspaceMaxChangedFiles,
				maxDiffBytes: config.workspaceMaxDiffBytes,
				maxTotalBytes: config.workspaceMaxChangesBytes,
			},
			archive,
			// git on the agent's folders runs confined as the config says (confined.ts).
			confine: confinementOf(config),
			gated: gatesSnapshots(config),
		},
		(id) => {
			if (!registry.has(id)) return undefined;
			const session = registry.get(id);
			return {
				cwd: session.cwd,
				pid: session.pid,
				emit: (type, fields) => session.events.append(type, JSON.stringify({ type, sessionId: id, ...fields })),
			};
		},
		logger.child({ component: "workspace" }),
	);
	if (config.workspaceChanges) warmToolThread();
	registry.subscribeAll((id, event) => tracker.onEvent(id, event));
	// pi's snapshot gate (extensions/snapshot-gate.ts) is answered here, never shown as an approval.
	registry.setQuietDialogs((id, request) => (isSnapshotGate(request) ? tracker.gate(id) : undefined));
	return tracker;
}
