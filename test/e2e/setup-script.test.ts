import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { bareMachinePath, hasCommand, weakBwrapScript } from "../helpers/host.ts";

// README's first command (scripts/setup.sh) ends in one of two ways on a fresh machine: a sandbox
// that holds, or a stop that names the one command to run. Its sandbox step (scripts/ensure-sandbox.sh)
// runs here on machines without bubblewrap, made by PATH: a stand-in apt-get records what it was asked
// (and "installs" by linking the real bwrap), a stand-in id plays a user who is not root.
const script = resolve(import.meta.dirname, "../../scripts/ensure-sandbox.sh");
const realBwrap = spawnSync("sh", ["-c", "command -v bwrap"], { encoding: "utf8" }).stdout.trim();
// Not under /tmp: the probe sandbox hides /tmp, and its `sh` is found on this PATH.
const dir = mkdtempSync("/var/tmp/pi-gateway-setup-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function machine(name: string, missing: string[], stand: Record<string, string>): string {
	const bin = bareMachinePath(join(dir, name), [...missing, ...Object.keys(stand)]);
	for (const [command, text] of Object.entries(stand)) {
		writeFileSync(join(bin, command), `#!/bin/sh\n${text}\n`);
		chmodSync(join(bin, command), 0o755);
	}
	return bin;
}

const run = (bin: string) => spawnSync("bash", [script], { encoding: "utf8", env: { ...process.env, PATH: bin } });

describe.runIf(realBwrap && hasCommand("apt-get"))("README's set-up on a machine without bubblewrap", () => {
	it("as root with apt-get: installs bubblewrap, and the sandbox holds", () => {
		const bin = join(dir, "root");
		machine("root", ["bwrap"], {
			"apt-get": `echo "$*" >> ${bin}/apt.log; case "$*" in *install*) ln -s ${realBwrap} ${bin}/bwrap;; esac`,
		});
		const result = run(bin);
		expect(result.stderr).toMatch(/installing bubblewrap/);
		expect(result.status).toBe(0);
		expect(readFileSync(join(bin, "apt.log"), "utf8")).toMatch(/^update -qq\ninstall -y -qq bubblewrap\n$/);
	});

	it("not root: stops with the one command to run, installs nothing", () => {
		const bin = join(dir, "user");
		machine("user", ["bwrap"], { id: "echo 1000", "apt-get": `touch ${bin}/apt-ran` });
		const result = run(bin);
		expect(result.status).toBe(1);
		expect(result.stderr).toMatch(/stopped: bubblewrap \(bwrap\), the sandbox each agent runs in, is not installed/);
		expect(result.stderr).toMatch(/Run: {2}sudo apt-get install -y bubblewrap\n/);
		expect(result.stderr).toMatch(/npm start -- --sandbox off/);
		expect(existsSync(join(bin, "apt-ran"))).toBe(false);
	});

	it("no apt-get: names the package for the system's own manager", () => {
		const bin = machine("other", ["bwrap", "apt-get"], { id: "echo 1000" });
		const result = run(bin);
		expect(result.status).toBe(1);
		expect(result.stderr).toMatch(/Run: {2}install the package bubblewrap with your system's package manager/);
	});

	it("a bwrap that runs but does not hold: stops and says why", () => {
		// The real bwrap minus the flags that take privilege away.
		const bin = machine("weak", ["bwrap"], {
			bwrap: weakBwrapScript(realBwrap),
		});
		const result = run(bin);
		expect(result.status).toBe(1);
		expect(result.stderr).toMatch(/the sandbox does not hold here: bwrap runs but does not hold: capabilities kept/);
		expect(result.stderr).toMatch(/stopped: bubblewrap cannot confine an agent here/);
	});
});
