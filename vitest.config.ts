import { defineConfig } from "vitest/config";
import LongestFirst from "./test/helpers/sequencer.ts";

export default defineConfig({
	test: {
		include: ["test/**/*.test.ts", "src/**/*.test.ts"],
		testTimeout: 30_000,
		hookTimeout: 30_000,
		pool: "forks",
		// Three files at a time on two cores: a clean-clone run used under half the CPU with two
		// (its files mostly wait on pi, sockets and child processes), and every test polls for a
		// state rather than timing it. PI_GATEWAY_TEST_WORKERS overrides it.
		maxWorkers: Number(process.env.PI_GATEWAY_TEST_WORKERS) || 3,
		sequence: { sequencer: LongestFirst },
		// The per-file times scripts/test-timings.ts turns into test/timings.json.
		reporters: ["default", ["json", { outputFile: ".vitest-report.json" }]],
		globalSetup: ["test/helpers/no-leaks.ts"],
	},
});
