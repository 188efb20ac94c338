import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { fixtures } from "../helpers/gateway.ts";
import * as noLeaks from "../helpers/no-leaks.ts";

/**
 * The suite's leak check (vitest globalSetup) must count the suite's own pi children only: a
 * gateway running beside the tests (a developer's, another CI job's) is none of its business, and
 * a child the suite leaked (its gateway still alive, or dead and the child orphaned) still fails it.
 * Here the test's own process stands in for the suite's main process.
 */
const idle = ["-e", "setInterval(() => {}, 1000)", "--", "--mode", "rpc"];
const started: { pid: number; group?: true }[] = [];
afterEach(() => {
	for (const p of started.splice(0))
		try {
			process.kill(p.group ? -p.pid : p.pid, "SIGKILL");
		} catch {}
});

/** `sh` runs `script` in the background and exits: what it started lives on, outside this process's tree. */
function outside(script: string): number {
	const sh = spawn("sh", ["-c", `${script} </dev/null >/dev/null 2>&1 &`], { detached: true, stdio: "ignore" });
	started.push({ pid: sh.pid as number, group: true });
	return sh.pid as number;
}

const rpcProcesses = () => {
	try {
		return execFileSync("pgrep", ["-f", "--", "--mode rpc"], { encoding: "utf8" }).trim().split("\n").length;
	} catch {
		return 0;
	}
};

describe("the suite's leak check", () => {
	it("ignores a pi started outside the suite (another gateway's child), present or new", async () => {
		noLeaks.setup();
		// A "gateway" that is not the suite's, alive, with its pi child: as a gateway beside the tests.
		outside(`${JSON.stringify(process.execPath)} ${join(fixtures, "outside-gateway.mjs")}`);
		await expect.poll(rpcProcesses).toBeGreaterThan(0);
		await expect(noLeaks.check(500)).resolves.toBeUndefined();
	});

	it("fails on a leaked child of the suite, and on one orphaned by a gateway that died", async () => {
		noLeaks.setup();
		const child: ChildProcess = spawn(process.execPath, idle, { stdio: "ignore" });
		started.push({ pid: child.pid as number });
		await expect(noLeaks.check(200)).rejects.toThrow(String(child.pid));
		process.kill(child.pid as number, "SIGKILL");
		await expect(noLeaks.check(2000)).resolves.toBeUndefined();

		// Its gateway (sh) exits at once: the pi is reparented away from the suite.
		outside(`${JSON.stringify(process.execPath)} ${idle.map((a) => `"${a}"`).join(" ")}`);
		await expect.poll(rpcProcesses).toBeGreaterThan(0);
		await expect(noLeaks.check(200)).rejects.toThrow("left running");
	});
});

describe("which processes are the suite's (selection over a process table)", () => {
	const table: noLeaks.ProcessRow[] = [
		{ pid: 1, ppid: 0, args: "/sbin/init" },
		{ pid: 100, ppid: 50, args: "node vitest run" },
		{ pid: 101, ppid: 100, args: "node vitest/dist/workers/forks.js" },
		// The suite's gateway (in the worker) and its pi, behind bwrap and a recorder.
		{ pid: 110, ppid: 101, args: "bwrap --die-with-parent -- node pi/cli.js --mode rpc --session-dir /tmp/x" },
		{ pid: 111, ppid: 110, args: "node pi/cli.js --mode rpc --session-dir /tmp/x" },
		{ pid: 120, ppid: 101, args: "node test/fixtures/tee-pi.mjs rec pi/cli.js --mode rpc" },
		{ pid: 121, ppid: 120, args: "node pi/cli.js --mode rpc" },
		// A cluster node the suite started, and its pi.
		{ pid: 130, ppid: 101, args: "node src/main.ts --database-url=…" },
		{ pid: 131, ppid: 130, args: "node pi/cli.js --mode rpc" },
		// Orphans: a recorder whose gateway died, with its pi; a bare pi.
		{ pid: 140, ppid: 1, args: "node test/fixtures/tee-pi.mjs rec pi/cli.js --mode rpc" },
		{ pid: 141, ppid: 140, args: "node pi/cli.js --mode rpc" },
		{ pid: 150, ppid: 1, args: "node pi/cli.js --mode rpc" },
		// A gateway beside the tests, and its pi: not the suite's.
		{ pid: 200, ppid: 190, args: "node src/main.ts --port 8080" },
		{ pid: 201, ppid: 200, args: "node pi/cli.js --mode rpc --session-dir /tmp/y" },
		{ pid: 202, ppid: 200, args: "bwrap -- node pi/cli.js --mode rpc" },
		{ pid: 203, ppid: 202, args: "node pi/cli.js --mode rpc" },
		// Not pi at all.
		{ pid: 160, ppid: 101, args: "sleep 5" },
	];

	it("counts descendants of the suite and orphans, not another gateway's children", () => {
		expect(noLeaks.suitePi(table, 100, new Set())).toEqual([110, 111, 120, 121, 131, 140, 141, 150]);
	});

	it("leaves out what ran before the suite started", () => {
		expect(noLeaks.suitePi(table, 100, new Set([150, 140]))).toEqual([110, 111, 120, 121, 131, 141]);
	});
});
