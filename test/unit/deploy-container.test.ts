import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

// deploy/container/Containerfile, read as the builder would: what its final stage copies exists in
// a built checkout, it runs as a user of its own with /data as the data dir and volume, and its
// health check asks /readyz. Building and running the image takes minutes and a container
// runtime: deploy/container/smoke.sh does that by hand (docs/deployment.md says what ran where).
const repo = resolve(import.meta.dirname, "../..");
const containerfile = readFileSync(join(repo, "deploy/container/Containerfile"), "utf8");
const stages = containerfile.split(/^FROM /m).slice(1);
const final = stages.at(-1) ?? "";

describe("the container recipe", () => {
	it("has a build stage and a final stage from the same base", () => {
		expect(stages.map((s) => s.split("\n")[0])).toEqual(["$" + "{BASE} AS build", "$" + "{BASE}"]);
	});

	it("copies into the final stage only what a built checkout has", () => {
		const sources = [...final.matchAll(/^COPY --from=build (.+) \S+$/gm)].flatMap((m) =>
			(m[1] as string).split(/\s+/).map((p) => p.replace(/^\/src\//, "")),
		);
		expect(sources).toEqual(expect.arrayContaining(["package.json", "bin", "dist", "extensions", "node_modules"]));
		for (const path of sources) expect(existsSync(join(repo, path)), path).toBe(true);
		// The bin runs dist/main.js (built by `npm run build`, as the build stage does).
		expect(existsSync(join(repo, "dist/main.js"))).toBe(true);
		expect(readFileSync(join(repo, "bin/pi-gateway.js"), "utf8")).toMatch(/dist\/main\.js/);
	});

	it("runs as a user of its own, with /data as data dir, home and volume, and a health check on /readyz", () => {
		const user = /^USER (\S+)$/m.exec(final)?.[1];
		expect(user).toBeDefined();
		expect(user).not.toMatch(/^(root|0)$/);
		expect(final).toMatch(new RegExp(`useradd [^\\n]*${user}`));
		expect(final).toMatch(/PI_GATEWAY_DATA_DIR=\/data/);
		expect(final).toMatch(/HOME=\/data/);
		expect(final).toMatch(/^VOLUME \["\/data"\]$/m);
		expect(final).toMatch(/^HEALTHCHECK [\s\S]*\/readyz/m);
		// Listening beyond loopback needs a token: the gateway makes one in /data on first start.
		expect(final).toMatch(/PI_GATEWAY_HOST=0\.0\.0\.0/);
		expect(final).toMatch(/apt-get install [^\n]*bubblewrap[^\n]*git[^\n]*ripgrep/);
	});

	it("keeps dependencies and build output of the host out of the build context", () => {
		const ignored = readFileSync(join(repo, ".containerignore"), "utf8").split("\n");
		for (const entry of ["node_modules", "dist", ".git"]) expect(ignored).toContain(entry);
	});

	it("its scripts parse", () => {
		for (const script of ["offline-base.sh", "smoke.sh"])
			execFileSync("bash", ["-n", join(repo, "deploy/container", script)]);
	});
});
