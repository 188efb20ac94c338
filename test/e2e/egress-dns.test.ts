import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { fixtures } from "../helpers/gateway.ts";

/**
 * One principal's tool must not stall another's prompt through the gateway's name lookups (an
 * attacker's review): the egress proxy awaited `dns.lookup()`, which runs getaddrinfo on libuv's
 * 4-thread pool, shared by the whole gateway (getaddrinfo may hold 2 of its threads); 60 lookups
 * against a DNS server that never answered made another principal's prompt take 287 s, its relay's
 * own lookup of its provider waiting behind them. egress-dns-stall.mjs runs a real gateway inside
 * `unshare -n -m` (only loopback; /etc/resolv.conf bind-mounted, in that mount namespace only, to a
 * DNS server on 127.0.0.1 that never answers): alice's tool floods lookups, and bob's prompt, to a
 * provider named `localhost`, must complete while the flood still runs. On the old code it waited
 * behind the flood's queue, about 120 lookups of 10 s each for 2 threads (this test then times out).
 */
let child: ChildProcess | undefined;
afterAll(() => {
	if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

function runInNamespace(): Promise<any> {
	return new Promise((resolve, reject) => {
		const proc = spawn("unshare", ["-n", "-m", process.execPath, join(fixtures, "egress-dns-stall.mjs")], {
			stdio: ["ignore", "pipe", "pipe"],
		});
		child = proc;
		let stdout = "";
		let stderr = "";
		proc.stdout?.setEncoding("utf8").on("data", (text: string) => {
			stdout += text;
		});
		proc.stderr?.setEncoding("utf8").on("data", (text: string) => {
			stderr += text;
		});
		proc.once("error", reject);
		proc.once("exit", (code) => {
			if (code !== 0) reject(new Error(`egress-dns-stall.mjs exited ${code}:\n${stderr}`));
			else resolve(JSON.parse(stdout.trim().split("\n").at(-1) as string));
		});
	});
}

it("a principal's prompt completes while another's tool floods the egress proxy with lookups that never answer", async () => {
	const report = await runInNamespace();
	expect(report.bobCreated).toBe(201);
	expect(report.bobRun).toEqual({ status: 200, text: "echo: hello" });
	expect(report.bobCalls).toBeGreaterThan(0);
	// The flood was on when bob's answer came (alice's run had not ended), and went on after it.
	expect(report.aliceWhenBobDone).toBe("running");
	expect(report.queries).toBeGreaterThan(report.queriesBeforeBob);
	expect(report.aliceRun.status).toBe(200);
}, 300_000);
