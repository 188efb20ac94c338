// Writes test/timings.json (seconds per test file, which test/helpers/sequencer.ts starts longest
// first) from the JSON report of the last `npm test` (.vitest-report.json, written by
// vitest.config.ts). Run it after a clean-clone .ci/run on a quiet machine and commit the file.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { relative, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");
const report = JSON.parse(readFileSync(resolve(root, ".vitest-report.json"), "utf8")) as {
	testResults: { name: string; startTime: number; endTime: number }[];
};
// A partial run updates its files and keeps the rest; a file gone from test/ is dropped.
const timings: Record<string, number> = JSON.parse(readFileSync(resolve(root, "test/timings.json"), "utf8"));
for (const name of Object.keys(timings)) if (!existsSync(resolve(root, name))) delete timings[name];
for (const file of report.testResults)
	timings[relative(root, file.name)] = Math.round((file.endTime - file.startTime) / 100) / 10;
const sorted = Object.fromEntries(Object.entries(timings).sort(([a], [b]) => (a < b ? -1 : 1)));
writeFileSync(resolve(root, "test/timings.json"), `${JSON.stringify(sorted, null, "\t")}\n`);
console.log(`test/timings.json: ${Object.keys(sorted).length} files`);
