#!/usr/bin/env node
// Runs the compiled JavaScript in dist/: Node refuses to strip TypeScript types under
// node_modules, so an installed package (from the registry, a tarball or git) must ship JS.
// `npm install`/`npm ci` in a checkout builds dist/ (the `prepare` script); `npm start` runs the
// sources directly.
import { existsSync } from "node:fs";

const main = new URL("../dist/main.js", import.meta.url);
if (!existsSync(main)) {
	console.error("pi-gateway: dist/main.js is missing; build it with `npm run build` (npm install does it too)");
	process.exit(2);
}
await import(main.href);
