// Preloaded into a benchmark gateway (bench/latency-tail.ts): appends each garbage collection to
// $GC_LOG as "<start ns> <duration ms> <kind>", its start on process.hrtime's clock
// (CLOCK_MONOTONIC, the clock of the stub's event stamps), so a slow event can be matched to a pause.
const { appendFileSync } = require("node:fs");
const { PerformanceObserver, performance } = require("node:perf_hooks");

const file = process.env.GC_LOG;
if (file) {
	const origin = process.hrtime.bigint() - BigInt(Math.round(performance.now() * 1e6));
	new PerformanceObserver((list) => {
		const lines = list
			.getEntries()
			.map((e) => `${origin + BigInt(Math.round(e.startTime * 1e6))} ${e.duration} ${e.detail?.kind ?? 0}\n`);
		appendFileSync(file, lines.join(""));
	}).observe({ entryTypes: ["gc"] });
}
