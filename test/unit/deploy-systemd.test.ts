import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

// deploy/systemd/pi-gateway.service as systemd itself reads it. `systemd-analyze verify` exits 0
// on unknown keys and bad values (it only warns), so the test asserts it says nothing at all.
// .ci/run installs systemd for this; no systemd runs as PID 1 on these machines, so the unit is
// verified, not started (docs/deployment.md says so).
const repo = resolve(import.meta.dirname, "../..");
const unitPath = join(repo, "deploy/systemd/pi-gateway.service");
const unit = readFileSync(unitPath, "utf8");

/** The unit with its ExecStart pointed at this checkout's bin (verify checks the file exists). */
function verify(text: string): { status: number | null; output: string } {
	const dir = mkdtempSync(join(tmpdir(), "unit-"));
	try {
		const file = join(dir, "pi-gateway.service");
		writeFileSync(file, text.replaceAll("/usr/local/bin/pi-gateway", join(repo, "bin/pi-gateway.js")));
		const result = spawnSync("systemd-analyze", ["verify", file], { encoding: "utf8" });
		return { status: result.status, output: `${result.stdout}${result.stderr}`.trim() };
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
}

describe("the systemd unit", () => {
	it("passes systemd-analyze verify without a warning", () => {
		expect(verify(unit)).toEqual({ status: 0, output: "" });
	});

	it("the check notices a key systemd does not know (so the first test can fail)", () => {
		const bad = unit.replace("[Service]\n", "[Service]\nProtectEverything=yes\n");
		expect(verify(bad).output).toMatch(/Unknown key 'ProtectEverything'/);
	});

	it("keeps the hardening that matters and the sandbox's namespaces", () => {
		for (const line of [
			"DynamicUser=yes",
			"NoNewPrivileges=yes",
			"ProtectSystem=strict",
			"ProtectHome=yes",
			"PrivateTmp=yes",
			"CapabilityBoundingSet=",
		]) {
			expect(unit.split("\n")).toContain(line);
		}
		// bubblewrap needs user/mount/pid/ipc/net/uts namespaces for every pi child.
		expect(unit).not.toMatch(/^RestrictNamespaces=(yes|true)$/m);
		// SIGTERM drains for --drain-timeout-ms (30 s); systemd must wait longer than that.
		expect(Number(/^TimeoutStopSec=(\d+)$/m.exec(unit)?.[1])).toBeGreaterThan(30);
	});

	it("starts the binary the package installs, with the state directory as its data dir", () => {
		expect(unit).toMatch(/^ExecStart=\/usr\/local\/bin\/pi-gateway --data-dir \/var\/lib\/pi-gateway$/m);
		expect(unit).toMatch(/^StateDirectory=pi-gateway$/m);
		expect(execFileSync("node", [join(repo, "bin/pi-gateway.js"), "--help"], { encoding: "utf8" })).toMatch(
			/--data-dir/,
		);
	});
});
