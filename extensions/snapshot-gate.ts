/**
 * pi-gateway's snapshot gate, loaded into every pi the gateway starts while change tracking is on
 * (--workspace-changes, the default). The gateway sends a prompt to pi at once and snapshots the
 * session's folder beside it (GET …/changes: what each run changed); this holds the run's first
 * tool call until that snapshot is taken, so no tool changes the folder before it and "what
 * changed" still names everything the run did.
 *
 * How it asks: a dialog with the title below, which the gateway answers itself (dismissed) once the
 * snapshot is done, at once when it is done already, and never shows as an approval. The answer
 * carries nothing: whatever comes back, the call goes on; only a gateway that never answers (past
 * TIMEOUT_MS) blocks the call rather than let it change the folder unseen.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

/** The gateway's src/workspace/snapshot-gate.ts holds the same title (a unit test checks). */
export const SNAPSHOT_GATE_TITLE = "pi-gateway:snapshot-gate";
/** Longer than any snapshot may take (--workspace-snapshot-timeout-ms, twice, with a retry). */
const TIMEOUT_MS = 10 * 60_000;

export default function (pi: ExtensionAPI) {
	/** Whether this low-level run's first tool call went through the gate already. */
	let passed = false;
	pi.on("agent_start", () => {
		passed = false;
	});
	pi.on("tool_call", async (_event, ctx) => {
		// Sibling calls of one message are checked one after the other, and run only after all are:
		// the first one's wait holds them all.
		if (passed || !ctx.hasUI) return undefined;
		passed = true;
		const dismiss = new AbortController();
		let timedOut = false;
		const timer = setTimeout(() => {
			timedOut = true;
			dismiss.abort();
		}, TIMEOUT_MS);
		const onAbort = () => dismiss.abort();
		ctx.signal?.addEventListener("abort", onAbort, { once: true });
		try {
			await ctx.ui.input(SNAPSHOT_GATE_TITLE, undefined, { signal: dismiss.signal });
		} finally {
			clearTimeout(timer);
			ctx.signal?.removeEventListener("abort", onAbort);
		}
		if (!timedOut) return undefined;
		passed = false;
		return { block: true, reason: "The gateway did not confirm its snapshot of the folder; try again" };
	});
}
