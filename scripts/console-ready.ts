import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";

/**
 * `npm start`'s first step: the console (/console) is served from dist/console, which a clone
 * does not hold (nothing built is committed). When it is missing and vite is installed (a clone
 * after `npm ci`), it is built here, once, before the gateway starts (a few seconds); without vite
 * (`npm ci --omit=dev` without README's setup.sh) the gateway starts anyway and /console answers a
 * page that says how to build it (scripts/build-console.sh; src/http/routes/console/not-built.ts).
 * It never fetches anything itself: setup.sh is where the build tools are installed. Never fails the start: the API needs no console.
 */
const root = resolve(import.meta.dirname, "..");
const built = join(root, "dist/console/index.html");
const vite = join(root, "node_modules/vite/bin/vite.js");

if (!existsSync(built)) {
	if (existsSync(vite)) {
		process.stderr.write("pi-gateway: building the console into dist/console (its first start)…\n");
		const run = spawnSync(process.execPath, [vite, "build", "-c", "console/vite.config.ts"], {
			cwd: root,
			stdio: ["ignore", "inherit", "inherit"],
		});
		if (run.status !== 0)
			process.stderr.write("pi-gateway: the console did not build (above); /console says how to build it\n");
	} else
		process.stderr.write(
			"pi-gateway: dist/console is missing and vite is not installed (npm ci --omit=dev): `bash scripts/build-console.sh` builds it; /console says so too\n",
		);
}
