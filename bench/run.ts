/**
 * `npm run bench` prints the benchmark tables; `npm run bench -- --smoke` runs each benchmark
 * tiny, so CI proves they still work without spending minutes. Figures, not pass/fail.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { runClusterBenchmarks } from "./cluster-suite.ts";
import { consoleFirstLoad } from "./console.ts";
import { fanout, idleSubscribers, latency, throughput } from "./events.ts";
import { fleet } from "./fleet.ts";
import { idleWake } from "./idle-wake.ts";
import { latencyTail } from "./latency-tail.ts";
import { startGatewayProcess, stubPi, table, tookInAll } from "./lib.ts";
import { fullPeerOptions, peers, smokePeerOptions } from "./peers.ts";
import { optionSets, piMemory } from "./pi-memory.ts";
import { poolCreate } from "./pool-create.ts";
import { promptLife, promptLifeTables, smokeArgs, smokePrompts } from "./prompt-life.ts";
import { fullRun, scale, sessionStart } from "./real-pi.ts";
import { relayBench } from "./relay.ts";
import { relayHop } from "./relay-hop.ts";
import { schemaStall } from "./schema-stall.ts";
import { sessionList } from "./session-list.ts";
import { snapshotCost } from "./workspace.ts";

const smoke = process.argv.includes("--smoke");
// --peers: the peer benchmark alone (it installs opencode and sandbox-agent into a cache folder);
// a full run leaves it out unless asked for, the smoke pass runs it small.
const peersOnly = process.argv.includes("--peers");
const only = peersOnly ? "peers" : process.argv.find((a) => a.startsWith("--only="))?.slice(7);
const want = (name: string) => (only ? only.split(",").includes(name) : name !== "peers" || smoke);

console.log(`# pi-gateway benchmarks${smoke ? " (smoke)" : ""}`);
console.log(
	`\n${new Date().toISOString()} · node ${process.version} · ${cpus().length} × ${cpus()[0]?.model ?? "cpu"} · ${Math.round(totalmem() / 2 ** 30)} GiB · \`npm run bench${smoke ? " -- --smoke" : ""}\``,
);

const stubGateway = await startGatewayProcess([
	"--pi-command",
	`${process.execPath} ${stubPi}`,
	"--max-sessions",
	"500",
	"--max-subscribers",
	"1000",
	// The flood's reader lags by more than the default 4 MiB on a busy 2-core machine and would be
	// cut off (by design, pi is never slowed for a reader), leaving a run that is no throughput.
	"--sse-max-buffered-bytes",
	String(256 * 2 ** 20),
]);
// Table 3b wants a fresh gateway: after the floods of 1–3 its heap has room to spare, which hides
// growth. The smoke pass measures it first, on the stub gateway while that is still fresh, and
// starts no gateway for it; a full run starts one of its own after the floods.
const idleTitle = "3b. Memory per idle SSE subscriber (fresh gateway)";
try {
	if (smoke && want("idle")) console.log(table(idleTitle, await idleSubscribers(stubGateway, 20)));
	if (want("latency")) {
		const rows = await latency(
			stubGateway,
			smoke ? [1000] : [1000, 10000],
			(rate) => (smoke ? 200 : rate * 10),
			smoke ? { flood: 200, pacedMs: 100 } : undefined,
		);
		console.log(table("1. Added latency per event (200 B events, stub pi → client)", rows));
	}
	if (want("throughput")) {
		const rows = await throughput(stubGateway, [200, 2048], smoke ? 2000 : 200_000, smoke ? 1 : 3);
		console.log(table("2. Throughput ceiling (stub floods events)", rows));
	}
	if (want("fanout")) {
		const rows = await fanout(stubGateway, smoke ? [1, 10] : [1, 10, 100], 5000, smoke ? 500 : 25_000);
		console.log(table("3. Fan-out: one session, N SSE subscribers at 5k events/s", rows));
	}
	if (!smoke && want("idle")) {
		const fresh = await startGatewayProcess([
			"--pi-command",
			`${process.execPath} ${stubPi}`,
			"--max-subscribers",
			"1000",
		]);
		try {
			console.log(table(idleTitle, await idleSubscribers(fresh, 500)));
		} finally {
			await fresh.stop();
		}
	}
} finally {
	await stubGateway.stop();
}

// Real pi from here. The smoke pass starts fewer gateways (a start is ≈ 1.5 s of a core, a
// sandboxed pi about 1 s): this one without a warm pool serves table 4's cold row and table 5 as
// well (a full run gives each its own fresh gateway), and its pool would only be pi started for nothing.
const piGateway = await startGatewayProcess([
	...(smoke ? ["--warm-pool", "0"] : []),
	"--max-live-sessions",
	"100",
	"--max-sessions",
	"500",
	"--data-dir",
	mkdtempSync(join(tmpdir(), "pi-bench-data-")),
]);
try {
	if (want("start")) {
		// README's defaults keep a warm pool: the cold row turns it off, the other has the defaults.
		const rows: Record<string, string | number>[] = [];
		for (const [label, args] of [
			["cold (--warm-pool 0)", ["--warm-pool", "0"]],
			["defaults (warm pool sized for the machine)", []],
		] as const) {
			const cold = args.length > 0;
			const gateway =
				smoke && cold
					? piGateway
					: await startGatewayProcess([...args, "--data-dir", mkdtempSync(join(tmpdir(), "pi-bench-start-"))]);
			try {
				// Smoke: one sample, a pause of 1 ms (a sample only waits until the pool holds a pi again).
				rows.push(await sessionStart(gateway, smoke ? 1 : 10, label, cold ? 0 : smoke ? 1 : 1500));
			} finally {
				if (gateway !== piGateway) await gateway.stop();
			}
		}
		console.log(table("4. Session start (real pi, demo model)", rows));
	}
	if (want("scale")) {
		// A fresh gateway, so its memory before the sessions is its own baseline (smoke: the one above).
		const fresh = smoke
			? piGateway
			: await startGatewayProcess([
					"--max-live-sessions",
					"100",
					"--data-dir",
					mkdtempSync(join(tmpdir(), "pi-bench-scale-")),
				]);
		let rows: Record<string, string | number>[];
		try {
			rows = [await scale(fresh, smoke ? 2 : 50)];
		} finally {
			if (fresh !== piGateway) await fresh.stop();
		}
		console.log(table("5. Scale: concurrent sessions, each running a prompt (real pi, demo model)", rows));
	}
	if (want("run")) {
		const rows = await fullRun(piGateway, smoke ? 200 : 2000);
		console.log(table("6. One real run (demo model): direct pipe vs gateway SSE", rows));
	}
} finally {
	await piGateway.stop();
}

if (want("tail")) {
	// Smoke: tiny and without perf (CI proves the bench runs; the attribution needs the 10 s run).
	const { rows, who } = smoke ? await latencyTail(1000, 0.2, 100, false, 200) : await latencyTail(1000, 10, 3000);
	console.log(table("11. Where the slow events of the 1k events/s run come from (200 B, stub pi → client)", rows));
	if (who.length > 0) console.log(table("11b. What held the CPUs while a thread of the chain waited for one", who));
}

if (want("pi-memory")) {
	// Smoke: the default set once, idle 0.3 s instead of 2 s and a `count: 200` long run, so CI proves
	// the bench runs; the figures need all sets, 5+ samples.
	const { memory, cost } = smoke
		? await piMemory(1, optionSets.slice(0, 1), { idleMs: 300, longCount: 200 })
		: await piMemory(5, optionSets);
	console.log(
		table("9. Memory of one live pi under Node option sets (--pi-node-options; real pi, demo model)", memory),
	);
	console.log(table("9b. Time and CPU under those option sets, and live sessions per GiB", cost));
}

if (want("prompt-life")) {
	const prompts = smoke ? smokePrompts : 200;
	console.log(promptLifeTables(await promptLife(prompts, 3, smoke ? smokeArgs : []), prompts, table));
}

if (want("idle-wake")) {
	// Smoke: 1 session, a 1 s idle timeout, idle until it is hibernated (at most 3 s); the figures
	// need 16 sessions left 90 s in the default start.
	const { memory, wake } = await idleWake(
		smoke
			? { sessions: 1, idleMs: 3000, args: ["--idle-timeout-ms", "1000"], untilHibernated: true }
			: { sessions: 16, idleMs: 90_000 },
	);
	console.log(table("16. Idle sessions past the idle timeout (default start, real pi, demo model)", memory));
	console.log(table("16b. A woken session's first delta against a live one's (same session, back to back)", wake));
	// The layout --workspace-root gives (sessions in the root): a wake is served by the warm pool's pi.
	const rootDir = mkdtempSync(join(tmpdir(), "pi-bench-root-"));
	try {
		const shared = await idleWake(
			smoke
				? {
						sessions: 1,
						idleMs: 3000,
						args: ["--idle-timeout-ms", "1000", "--workspace-root", rootDir],
						untilHibernated: true,
						awaitPool: true,
					}
				: { sessions: 16, idleMs: 90_000, args: ["--workspace-root", rootDir], awaitPool: true },
		);
		console.log(
			table(
				"16c. The same with --workspace-root: sessions in the root, each woken on the warm pool's pi",
				shared.memory,
			),
		);
		console.log(
			table("16d. A woken session's first delta against a live one's, woken on the warm pool's pi", shared.wake),
		);
	} finally {
		rmSync(rootDir, { recursive: true, force: true });
	}
}

if (want("fleet")) {
	// Real pi, the default start: 1,000 sessions take a pi start each (the pool's refill), so a
	// full run is long (≈ 1.5 s of a core a create); the smoke pass grows a fleet of 2 to 3, one in use.
	const { rows, flat } = await fleet(
		smoke ? { sizes: [2, 3], active: 1, lists: 3 } : { sizes: [100, 300, 1000], active: 20, lists: 20 },
	);
	console.log(table("18. A fleet on one machine: sessions grown to each size, 20 of them in use (real pi)", rows));
	console.log(table("18b. Flat cost: the largest fleet against the smallest", flat));
}

if (want("pool-create")) {
	// Real pi: each create waits for the pool to be full again, so this is what a pooled create costs.
	// Smoke: one create of each kind, one start and one restart, on two gateways instead of four.
	const rows = await poolCreate(smoke ? 1 : 10, smoke ? 1 : 5, smoke);
	console.log(table("17. Create → ready from the warm pool, by kind of create, and start → healthy (real pi)", rows));
}

if (want("workspace"))
	console.log(
		table(
			"7. Workspace snapshot (shadow git repository) of a folder of N files",
			await snapshotCost(smoke ? 500 : 10_000),
		),
	);

if (want("console")) console.log(table("8. Console first load (what GET /console/ fetches)", consoleFirstLoad()));

if (want("list")) {
	const count = smoke ? 300 : 10_000;
	const rows = smoke ? await sessionList(count, 3, ["--warm-pool", "0"]) : await sessionList(count, 20);
	console.log(table(`10. GET /v1/sessions on one gateway (SQLite) holding ${count} stopped sessions`, rows));
}

if (want("schema-stall")) {
	// Smoke: 0.25 s a phase, one loop of each kind, alice with one session, no warm pool; the figures
	// need 20 s a phase in 5 turns, four of each.
	const rows = smoke
		? await schemaStall(0.25, 1, 1, 1, { aliceSessions: 1, args: ["--warm-pool", "0"] })
		: await schemaStall(20, 4, 4, 5);
	console.log(
		table("14. One principal's worst schemas against another's GET /v1/sessions (real pi, demo model)", rows),
	);
}

if (want("relay")) {
	// Smoke: 1 round of 200 tokens (after the warm-up round), both gateways started at once; the
	// figures need 15 rounds of a short answer and of a long one.
	for (const tokens of smoke ? [200] : [200, 5000]) {
		const { rows, note } = await relayBench(smoke ? 1 : 15, tokens, smoke);
		console.log(
			table(`15. The model relay (sandboxed pi) against a direct call (--sandbox off), ${tokens} tokens`, rows),
		);
		console.log(`\n${note}`);
	}
	const hop = await relayHop(smoke ? 2 : 30, smoke ? 200 : 5000);
	console.log(table("15b. The relay's hop alone (a plain client, no pi, no sandbox), scripted model", hop));
	console.log(`\nload average ${loadavg()[0]?.toFixed(1)} after`);
}

if (want("peers")) {
	// Smoke: one round, 2 sessions, 200- and 50-token answers; the figures need the full run.
	const options = { ...(smoke ? smokePeerOptions : fullPeerOptions) };
	const rounds = process.argv.find((a) => a.startsWith("--rounds="));
	if (rounds) options.rounds = Number(rounds.slice(9));
	const result = await peers(options, (line) => console.error(`peers: ${line}`));
	console.log(`\n${result.header}`);
	console.log(table("13. pi-gateway beside opencode and sandbox-agent (one scripted model, offline)", result.rows));
	for (const note of result.notes) console.log(`\n${note}`);
}

await runClusterBenchmarks(smoke, want);
if (smoke) console.log(`\nsmoke: every table together took ${tookInAll()}`);
