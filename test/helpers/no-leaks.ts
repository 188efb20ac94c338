import { execFileSync } from "node:child_process";

/**
 * The suite fails if it leaves a pi child behind (vitest globalSetup: setup() before the first
 * test file, teardown() after the last). Only the suite's own children count, so a gateway running
 * beside the tests (a developer's, another CI job's) does not fail it.
 *
 * "Own" is told by ancestry, since nothing else marks them: pi's environment is an allow-list
 * (src/config/child-env.ts, PI_GATEWAY_* never reaches it) and each pi leads its own process group. A pi
 * process (anything with `--mode rpc` in its argv: pi, a stub, bwrap or a recorder in front of
 * one) is the suite's when the suite's main process is among its ancestors, or when it is an
 * orphan: its chain of pi processes hangs off pid 1 (or nothing), which is where a leaked child
 * lands once the gateway or cluster node that started it has died. Another gateway's children hang
 * off that gateway, alive. What ran before the suite started is left out.
 */
export interface ProcessRow {
	pid: number;
	ppid: number;
	args: string;
}

const isPi = (row: ProcessRow) => row.args.includes("--mode rpc");

/** The pids of the suite's pi processes in `table`, in pid order. */
export function suitePi(table: ProcessRow[], suitePid: number, before: ReadonlySet<number>): number[] {
	const byPid = new Map(table.map((row) => [row.pid, row]));
	const own = (row: ProcessRow): boolean => {
		const seen = new Set<number>();
		let at: ProcessRow | undefined = row;
		// Up through the pi processes (bwrap → pi, recorder → pi) to the first that is not one.
		while (at && isPi(at) && !seen.has(at.pid)) {
			seen.add(at.pid);
			at = byPid.get(at.ppid);
		}
		if (!at || at.pid === 1 || at.pid === 0) return true; // an orphan
		for (; at && !seen.has(at.pid); at = byPid.get(at.ppid)) {
			if (at.pid === suitePid) return true;
			seen.add(at.pid);
		}
		return false;
	};
	return table
		.filter((row) => isPi(row) && !before.has(row.pid) && own(row))
		.map((row) => row.pid)
		.sort((a, b) => a - b);
}

/** Every process on the machine: pid, parent, command line. */
export function processTable(): ProcessRow[] {
	const text = execFileSync("ps", ["-A", "-o", "pid=,ppid=,args="], { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
	const rows: ProcessRow[] = [];
	for (const line of text.split("\n")) {
		const match = /^\s*(\d+)\s+(\d+)\s(.*)$/.exec(line);
		if (match) rows.push({ pid: Number(match[1]), ppid: Number(match[2]), args: match[3] as string });
	}
	return rows;
}

let suitePid = process.pid;
let before = new Set<number>();

export function setup(): void {
	suitePid = process.pid;
	before = new Set(
		processTable()
			.filter(isPi)
			.map((row) => row.pid),
	);
}

export async function teardown(): Promise<void> {
	await check(5000);
}

/** Resolves once no pi process of the suite is left (waiting up to `waitMs` for ones still stopping). */
export async function check(waitMs: number): Promise<void> {
	const leaked = () => suitePi(processTable(), suitePid, before);
	for (const deadline = Date.now() + waitMs; leaked().length > 0 && Date.now() < deadline; )
		await new Promise((r) => setTimeout(r, 100));
	const left = leaked();
	if (left.length > 0) throw new Error(`pi processes left running after the suite: ${left.join(", ")}`);
}
