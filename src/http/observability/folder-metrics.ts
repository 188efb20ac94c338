import { Counter, type Registry } from "prom-client";
import type { FolderSyncCounts } from "../../cluster/folder-sync.ts";

/**
 * Cluster mode: how sessions' folders are kept in PostgreSQL and restored on the node that takes a
 * session over (src/cluster/folder-sync.ts), read from its counts at scrape time. Zero on a single
 * gateway (no source).
 */
export function folderCounters(registers: Registry[], source: () => FolderSyncCounts | undefined): void {
	const total = (name: string, help: string, value: (c: FolderSyncCounts) => number) =>
		new Counter({
			name,
			help,
			registers,
			collect() {
				this.reset();
				const counts = source();
				this.inc(counts ? value(counts) : 0);
			},
		});
	new Counter({
		name: "pi_gateway_folder_syncs_total",
		help: "Cluster mode: stores of a session's folder in PostgreSQL (at its start, each settled run and when pi stops), by outcome: stored (something changed), unchanged (nothing written) or failed",
		labelNames: ["outcome"],
		registers,
		collect() {
			this.reset();
			const counts = source();
			this.inc({ outcome: "stored" }, counts?.stored ?? 0);
			this.inc({ outcome: "unchanged" }, counts?.unchanged ?? 0);
			this.inc({ outcome: "failed" }, counts?.failed ?? 0);
		},
	});
	total(
		"pi_gateway_folder_sync_over_cap_total",
		"Cluster mode: stores of a session's folder that left files out, past --workspace-sync-max-bytes (each also said in a folder_sync event on the session's stream)",
		(c) => c.overCap,
	);
	total(
		"pi_gateway_folder_sync_bytes_total",
		"Cluster mode: bytes of sessions' folders sent to PostgreSQL (new chunks and manifest rows; an unchanged file costs none)",
		(c) => c.bytes,
	);
	new Counter({
		name: "pi_gateway_folder_restores_total",
		help: "Cluster mode: sessions' folders restored on this node when it took a session over, by outcome: complete, or incomplete (a folder_restore event names what is missing)",
		labelNames: ["outcome"],
		registers,
		collect() {
			this.reset();
			const counts = source();
			this.inc({ outcome: "complete" }, counts?.restoresComplete ?? 0);
			this.inc({ outcome: "incomplete" }, counts?.restoresIncomplete ?? 0);
		},
	});
}
