#!/usr/bin/env node
// Runs the compiled JavaScript in dist/: Node refuses to strip TypeScript types under
// node_modules, so an installed package (from the registry, a tarball or git) must ship JS. It runs
// dist/pi-gateway.mjs, the server bundled with its dependencies (scripts/bundle.ts), which starts in
// under half the time of tsc's ~300 files and their dependencies' (BENCHMARKS.md table 17).
// `npm pack`, `npm publish` and a git install build dist/ (the `prepack` script); in a checkout
// `npm run build` does; `npm start` runs the sources directly.
// The Node version is checked first, in syntax every Node since 12 parses: on an older Node the
// gateway's first import (node:sqlite) fails with a message that says nothing about the version.
import { existsSync } from "node:fs";

const needed = [22, 19];
const [major, minor] = process.versions.node.split(".").map(Number);
if (major < needed[0] || (major === needed[0] && minor < needed[1])) {
	console.error(
		`pi-gateway: needs Node.js >= ${needed.join(".")} (node:sqlite, type stripping); this is Node ${process.versions.node} at ${process.execPath}. Install Node 22 LTS or newer (https://nodejs.org, or nvm install 22) and run pi-gateway with it.`,
	);
	process.exit(2);
}

const main = new URL("../dist/pi-gateway.mjs", import.meta.url);
if (!existsSync(main)) {
	console.error("pi-gateway: dist/pi-gateway.mjs is missing; build it with `npm run build`");
	process.exit(2);
}
await import(main.href);
