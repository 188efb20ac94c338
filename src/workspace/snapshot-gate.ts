import type { UiRequest } from "../pi/protocol.ts";

/**
 * The dialog extensions/snapshot-gate.ts opens before a run's first tool call: the gateway answers
 * it itself once the run's start snapshot is taken (tracker.ts), so the prompt reaches pi without
 * waiting for git and no tool changes the folder before the snapshot. It is never an approval and
 * never logged. Any process that prints as pi can open one; all it gets is a dismissal, sent when
 * the session's pending snapshots are done, which tells nothing and approves nothing.
 */
export const snapshotGateTitle = "pi-gateway:snapshot-gate";

export function isSnapshotGate(request: UiRequest): boolean {
	return request.method === "input" && request.title === snapshotGateTitle;
}
