import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { finalStage, stages } from "../helpers/deploy.ts";

// deploy/container/Containerfile, read as the builder would: two stages, the final one from a
// plain Debian base with only what running needs, uid and gid 10001, /data as data dir and volume,
// a health check on /readyz. deploy/container/build.sh --check, run as it is: what it needs and
// what it says when something is missing. Building the image takes minutes and root, so the suite
// does not; docs/deployment.md says what the build gave when it was run by hand.
const repo = resolve(import.meta.dirname, "../..");
const build = join(repo, "deploy/container/build.sh");
const buildStage = stages[0] ?? "";

describe("the container recipe", () => {
	it("builds in one stage and runs from another, on a base without node or npm", () => {
		expect(stages.map((s) => s.split("\n")[0])).toEqual(["$" + "{BASE} AS build", "$" + "{RUNTIME_BASE}"]);
		const containerfile = readFileSync(join(repo, "deploy/container/Containerfile"), "utf8");
		expect(containerfile).toMatch(/^ARG RUNTIME_BASE=docker\.io\/library\/debian:bookworm-slim$/m);
		// The runtime's dependencies are installed apart, without dev ones; maps and declarations go.
		expect(buildStage).toMatch(/npm ci --omit=dev /);
		expect(buildStage).toMatch(/-name '\*\.map' -o -name '\*\.d\.ts'/);
		// The final stage takes node and /app from the build stage, and nothing else.
		const copies = [...finalStage.matchAll(/^COPY (.+)$/gm)].map((m) => m[1]);
		expect(copies).toEqual(["--from=build /runtime/node /usr/local/bin/node", "--from=build /runtime/app /app"]);
		expect(finalStage).not.toMatch(/\bnpm\b/);
	});

	it("puts into /app only what a built checkout has and running needs", () => {
		const listed = /cp -r ((?:\S+ )+)\/runtime\/app\//.exec(buildStage)?.[1]?.trim().split(" ") ?? [];
		expect(listed).toEqual(expect.arrayContaining(["package.json", "bin", "dist", "extensions"]));
		expect(listed).not.toContain("node_modules");
		expect(listed).not.toContain("src");
		for (const path of listed) expect(existsSync(join(repo, path)), path).toBe(true);
		// The bin runs dist/pi-gateway.mjs, which `npm run build` writes.
		expect(buildStage).toMatch(/npm run build/);
		expect(readFileSync(join(repo, "bin/pi-gateway.js"), "utf8")).toMatch(/dist\/pi-gateway\.mjs/);
	});

	it("runs as uid and gid 10001, with /data as data dir, home and volume, and a health check on /readyz", () => {
		expect(finalStage).toMatch(/groupadd --gid 10001 pi-gateway/);
		expect(finalStage).toMatch(/useradd --uid 10001 --gid 10001 [^\n]*pi-gateway/);
		expect(finalStage).toMatch(/chown 10001:10001 \/data/);
		expect(finalStage).toMatch(/^USER 10001:10001$/m);
		expect(finalStage).toMatch(/PI_GATEWAY_DATA_DIR=\/data/);
		expect(finalStage).toMatch(/HOME=\/data/);
		expect(finalStage).toMatch(/^VOLUME \["\/data"\]$/m);
		expect(finalStage).toMatch(/^HEALTHCHECK [\s\S]*\/readyz/m);
		expect(finalStage).toMatch(/^STOPSIGNAL SIGTERM$/m);
		// Listening beyond loopback needs a token: the gateway makes one in /data on first start.
		expect(finalStage).toMatch(/PI_GATEWAY_HOST=0\.0\.0\.0/);
		expect(finalStage).toMatch(/apt-get install [^\n]*bubblewrap[^\n]*git[^\n]*ripgrep[^\n]*tini/);
	});

	it("keeps dependencies and build output of the host out of the build context", () => {
		const ignored = readFileSync(join(repo, ".containerignore"), "utf8").split("\n");
		for (const entry of ["node_modules", "dist", ".git"]) expect(ignored).toContain(entry);
	});

	it("its scripts parse", () => {
		for (const script of ["offline-base.sh", "smoke.sh", "build.sh"])
			execFileSync("bash", ["-n", join(repo, "deploy/container", script)]);
	});
});

describe("deploy/container/build.sh --check", () => {
	/** A PATH of links to the few tools build.sh --check uses, found on this machine's PATH: no buildah. */
	function pathWithoutBuildah(): { path: string; dir: string } {
		const dir = mkdtempSync(join(tmpdir(), "build-check-"));
		for (const tool of ["bash", "dirname", "grep", "sed", "id", "git", "node", "npm", "mmdebstrap"]) {
			const found = spawnSync("bash", ["-c", `command -v ${tool}`], { encoding: "utf8" }).stdout.trim();
			if (found) symlinkSync(found, join(dir, tool));
		}
		return { path: dir, dir };
	}
	const run = (env: NodeJS.ProcessEnv) => {
		const result = spawnSync("bash", [build, "--check"], { encoding: "utf8", env });
		return { status: result.status, out: `${result.stdout}${result.stderr}` };
	};

	it("without buildah, names it with the command that installs it, and fails before building", () => {
		const { path, dir } = pathWithoutBuildah();
		try {
			const { status, out } = run({ ...process.env, PATH: path });
			expect(status).toBe(1);
			expect(out).toMatch(/MISSING: buildah \(builds the image\): apt-get install buildah/);
			expect(out).toMatch(/cannot build: missing buildah/);
			expect(out).not.toMatch(/check done/);
		} finally {
			rmSync(dir, { recursive: true, force: true });
		}
	});

	it("hands the machine's CA to npm ci as a build secret, and refuses one it cannot read", () => {
		const ca = join(repo, "package.json"); // any readable file stands for a CA bundle here
		const named = run({ ...process.env, NODE_EXTRA_CA_CERTS: ca });
		expect(named.out).toContain(`ok: CA for npm ci: ${ca} (a build secret, not kept in the image)`);
		const missing = run({ ...process.env, NODE_EXTRA_CA_CERTS: "/nonexistent/ca.pem" });
		expect(missing.status).toBe(1);
		expect(missing.out).toMatch(/MISSING: the CA file \/nonexistent\/ca\.pem .* cannot be read/);
	});

	it("says which bases a build would use, and with everything there, what it would run", () => {
		const { status, out } = run({ ...process.env, BASE: "example/node:22", RUNTIME_BASE: "example/debian:12" });
		expect(out).toContain("ok: bases named: BASE=example/node:22 RUNTIME_BASE=example/debian:12");
		if (spawnSync("bash", ["-c", "command -v buildah"]).status === 0) {
			expect(status).toBe(0);
			expect(out).toMatch(/check done: a build would run buildah build --format docker --layers=false /);
		} else expect(out).toMatch(/MISSING: buildah/);
	});
});
