import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

// The gateway runs from three layouts: src/ (npm start, type stripping), dist/ (tsc's output, one
// file per module) and dist/pi-gateway.mjs with dist/chunks/ (the bin: the server bundled). A module's own
// URL says a different depth in each, so files that ship beside the code (package.json, extensions/,
// the built console, worker threads) are found from the package's root instead.

/** Whether this process runs the TypeScript sources (npm start, the tests) rather than built JS. */
export const runsSources = import.meta.url.endsWith(".ts");

/** The folder holding pi-gateway's package.json: the checkout, or the installed package. */
export const packageRoot = findPackageRoot(dirname(fileURLToPath(import.meta.url)));

/** pi-gateway's version, from its package.json. */
export const gatewayVersion: string = JSON.parse(readFileSync(join(packageRoot, "package.json"), "utf8")).version;

/** A file that ships with the package, by its path from the package's root (extensions/…, dist/console/). */
export function packageFile(path: string): string {
	return join(packageRoot, path);
}

/**
 * A module run on its own (a worker thread, a watchdog process), by its path under src/ without the
 * extension: the .ts source when the gateway runs its sources, else tsc's .js in dist/. The bundle
 * does not hold these; it starts them from dist/, which the same build wrote.
 */
export function moduleFile(path: string): string {
	return runsSources ? join(packageRoot, "src", `${path}.ts`) : join(packageRoot, "dist", `${path}.js`);
}

/**
 * The nearest package.json above this module, which must be pi-gateway's: not the nearest one
 * named pi-gateway, since whoever can write a folder further up could then choose the worker
 * threads and extensions the gateway runs.
 */
function findPackageRoot(start: string): string {
	for (let dir = start; ; dir = dirname(dir)) {
		const file = join(dir, "package.json");
		if (existsSync(file)) {
			const name = JSON.parse(readFileSync(file, "utf8")).name;
			if (name === "pi-gateway") return dir;
			throw new Error(`pi-gateway: ${file} is not pi-gateway's package.json (its name is ${JSON.stringify(name)})`);
		}
		if (dirname(dir) === dir) throw new Error(`pi-gateway: no package.json above ${start}`);
	}
}
