/**
 * The cluster-mode tables (run.ts calls this last): one embedded PostgreSQL for all of them, a
 * fresh database and fresh nodes per table, everything stopped at the end, also on failure.
 * `--smoke` runs each tiny (failover only with a short lease: the default one alone takes 10 s).
 */

import { commandLatency, eventLatency } from "./cluster.ts";
import { runFolderBenchmarks } from "./cluster-folders.ts";
import { BenchCluster } from "./cluster-harness.ts";
import { failover, resume } from "./cluster-recovery.ts";
import { registry } from "./cluster-registry.ts";
import { table } from "./lib.ts";

export const clusterBenchmarks = [
	"cluster-latency",
	"cluster-events",
	"cluster-resume",
	"cluster-registry",
	"cluster-failover",
	"cluster-folders",
];

export async function runClusterBenchmarks(smoke: boolean, want: (name: string) => boolean): Promise<void> {
	if (!clusterBenchmarks.some(want)) return;
	const h = await BenchCluster.start();
	// Ctrl-C or a kill of the bench still stops the nodes and PostgreSQL.
	const interrupted = (signal: NodeJS.Signals) => {
		void h.close().finally(() => process.exit(signal === "SIGINT" ? 130 : 143));
	};
	process.once("SIGINT", interrupted);
	process.once("SIGTERM", interrupted);
	try {
		if (want("cluster-latency")) {
			const rows = smoke ? await commandLatency(h, 10, 2) : await commandLatency(h, 400);
			console.log(table("C1. Cluster: a command through the owner vs through another node", rows));
		}
		if (want("cluster-events")) {
			const rows = smoke ? await eventLatency(h, 400, 1000, 200) : await eventLatency(h, 10_000, 1000);
			console.log(table("C1b. Cluster: SSE events read from the owner vs from another node (200 B events)", rows));
		}
		if (want("cluster-resume")) {
			const rows = await resume(h, smoke ? 1 : 20, !smoke);
			console.log(
				table("C2. Cluster: resume on node B of a session stopped on node A (its first prompt, `echo:`)", rows),
			);
		}
		if (want("cluster-registry")) {
			const count = smoke ? 500 : 10_000;
			const [rows, per] = await registry(h, count, smoke ? 1 : 3, smoke ? 3 : 20);
			console.log(table(`C3. Cluster: ${count} registered stopped sessions`, rows as never));
			console.log(table("C3b. Cluster: node memory per registered session", per as never));
		}
		if (want("cluster-failover")) {
			const rows = await failover(h, smoke ? [2000] : [10_000, 3000], smoke ? 1 : 3);
			console.log(table("C4. Cluster: failover after SIGKILL of the owner (prompt through another node)", rows));
		}
		if (want("cluster-folders")) await runFolderBenchmarks(h, smoke);
	} finally {
		process.off("SIGINT", interrupted);
		process.off("SIGTERM", interrupted);
		await h.close();
	}
}
