import { readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";

// Where scripts/bundle.ts writes the bin's bundle, and whether that build is the sources' own:
// the suite (test/helpers/gateway-entry.ts) and the benchmarks run it only then.
const root = resolve(import.meta.dirname, "..");
export const bundleFile = join(root, "dist/pi-gateway.mjs");

/**
 * True when the bundle is newer than every file it was made from (src/, the lock, the bundler), as
 * right after `npm run build`; false when it is missing or a source was edited since.
 */
export function bundleIsCurrent(): boolean {
	let built: number;
	try {
		built = statSync(bundleFile).mtimeMs;
	} catch {
		return false;
	}
	const inputs = [
		...readdirSync(join(root, "src"), { recursive: true, withFileTypes: true })
			.filter((entry) => entry.isFile())
			.map((entry) => join(entry.parentPath, entry.name)),
		...["package.json", "package-lock.json", "scripts/bundle.ts"].map((file) => join(root, file)),
	];
	return inputs.every((file) => statSync(file).mtimeMs <= built);
}
