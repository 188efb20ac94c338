import { resolve } from "node:path";
import { bundleFile, bundleIsCurrent } from "../../scripts/bundle-current.ts";

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
	const sources = resolve(import.meta.dirname, "../../src/main.ts");
	if (asked === "src") return sources;
	if (asked === "bundle") return bundleFile;
	return bundleIsCurrent() ? bundleFile : sources;
}
