import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * Longest files first, from test/timings.json (seconds per file of a measured clean-clone run;
 * `npm run test:timings` writes it from the last run's report), so the suite's tail is short
 * files and not sandbox-escape's three minutes started last. A clean clone has no vitest cache,
 * where the base sequencer falls back to file size, which does not predict time here (a
 * 168-line file is the slowest). A file not in the table counts as `unknown` seconds.
 */
const unknown = 20;

export default class LongestFirst extends BaseSequencer {
	override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
		let timings: Record<string, number> = {};
		try {
			timings = JSON.parse(readFileSync(new URL("../timings.json", import.meta.url), "utf8"));
		} catch {}
		const root = this.ctx.config.root;
		const seconds = (spec: TestSpecification) => timings[relative(root, spec.moduleId)] ?? unknown;
		return [...files].sort((a, b) => seconds(b) - seconds(a));
	}
}
