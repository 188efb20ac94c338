import { spawn, spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startGateway } from "../../src/app/server.ts";
import { gatewayEntry } from "../helpers/gateway-entry.ts";
import { weakBwrapScript } from "../helpers/host.ts";

// The start-up probe asks whether the sandbox HOLDS, not whether bwrap runs: a bwrap that runs
// but leaves the tools their capabilities (as bwrap did for root before issue 20) is "unavailable",
// and then no agent starts (fail closed).
// The shim below is that bwrap: the real one, minus the flags that take privilege away.
const realBwrap = spawnSync("sh", ["-c", "command -v bwrap"], { encoding: "utf8" }).stdout.trim();
const dir = mkdtempSync(join(tmpdir(), "pi-gateway-probe-test-"));
const shimDir = join(dir, "bin");
spawnSync("mkdir", [shimDir]);
writeFileSync(join(shimDir, "bwrap"), `#!/bin/sh\n${weakBwrapScript(realBwrap)}\n`);
chmodSync(join(shimDir, "bwrap"), 0o755);
const shimPath = `${shimDir}:${process.env.PATH}`;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const main = gatewayEntry;
/** The CLI, with the shim first on PATH: its exit code and what it printed, once it exits or listens. */
function runCli(sandbox: string): Promise<{ code: number | null; stderr: string }> {
	const args = [main, "--port", "0", "--host", "127.0.0.1", "--sandbox", sandbox, "--data-dir", join(dir, sandbox)];
	const child = spawn(process.execPath, args, { env: { ...process.env, PATH: shimPath }, stdio: "pipe" });
	let stderr = "";
	child.stderr.on("data", (chunk) => {
		stderr += chunk;
		// Listening, its notices said: it started (auto); stop it, this test only wanted its start-up words.
		if (stderr.includes("pi-gateway: listening on")) child.kill("SIGTERM");
	});
	return new Promise((done) => child.on("exit", (code) => done({ code, stderr })));
}

describe.runIf(realBwrap)("the sandbox probe", () => {
	it.runIf(process.platform === "linux")(
		"a bwrap that runs but keeps capabilities inside: auto starts no agent and says why, on refuses",
		{ timeout: 60_000 },
		async () => {
			const path = process.env.PATH;
			process.env.PATH = shimPath;
			try {
				const gw = await startGateway({
					port: 0,
					sandbox: "auto",
					dataDir: join(dir, "in-process"),
					logLevel: "silent",
				});
				try {
					expect(gw.sandbox).toEqual({
						enabled: false,
						state: "unavailable",
						reason: expect.stringMatching(
							/^bwrap runs but does not hold: capabilities kept inside \(CapEff [0-9a-f]*[1-9a-f][0-9a-f]*\); a process inside lifted a hide with umount$/,
						),
					});
					await expect(gw.registry.create({ persist: true })).rejects.toMatchObject({
						status: 503,
						code: "sandbox_unavailable",
					});
				} finally {
					await gw.close();
				}
			} finally {
				process.env.PATH = path;
			}
			const auto = await runCli("auto");
			expect(auto.stderr).toMatch(
				/pi-gateway: NO SESSION CAN START: the sandbox is unavailable \(bwrap runs but does not hold: capabilities kept inside/,
			);
			const on = await runCli("on");
			expect(on.code).toBe(2);
			expect(on.stderr).toMatch(/pi-gateway: --sandbox on, but bwrap runs but does not hold: capabilities kept inside/);
		},
	);
});
