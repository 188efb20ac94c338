import { readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";

const repo = resolve(import.meta.dirname, "../..");
const sources = join(repo, "src/main.ts");
const bundle = join(repo, "dist/pi-gateway.mjs");

/**
 * The file a test runs as a gateway process: the bin's bundle (dist/pi-gateway.mjs, what an
 * installed pi-gateway runs) when that build is newer than every file it was made from, as after
 * `.ci/run`'s build; else the sources (`node src/main.ts`), so a checkout with edited sources never
 * tests an older build. The bundle starts on under half the CPU (BENCHMARKS.md table 17), and the
 * suite starts about 200 gateway processes. PI_GATEWAY_TEST_ENTRY=src or =bundle chooses.
 * `npm start` runs the sources: tests of README's layout run them whatever this says.
 */
export const gatewayEntry: string = choose(process.env.PI_GATEWAY_TEST_ENTRY);

function choose(asked: string | undefined): string {
	if (asked === "src") return sources;
	if (asked === "bundle") return bundle;
	let built: number;
	try {
		built = statSync(bundle).mtimeMs;
	} catch {
		return sources;
	}
	const inputs = [join(repo, "package.json"), join(repo, "package-lock.json"), join(repo, "scripts/bundle.ts")];
	return newest(
		join(repo, "src"),
		inputs.map((file) => statSync(file).mtimeMs),
	) <= built
		? bundle
		: sources;
}

function newest(dir: string, found: number[]): number {
	for (const entry of readdirSync(dir, { withFileTypes: true })) {
		const path = join(dir, entry.name);
		if (entry.isDirectory()) newest(path, found);
		else found.push(statSync(path).mtimeMs);
	}
	return Math.max(...found);
}
