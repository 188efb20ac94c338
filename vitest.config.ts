import { defineConfig } from "vitest/config";
import LongestFirst from "./test/helpers/sequencer.ts";

/**
 * Test files that change what the process holds for the files after them in the same worker
 * (process.env and PATH that src/ looks up once: ripgrep, the sealed node; a fresh module copy), so
 * each gets a process of its own. Every other file shares its worker's modules with the files
 * before it: a file of its own costs a process, the gateway's modules evaluated again, the spec
 * parsed and the API document built again (about 1 s of CPU a file, 249 files, on two cores).
 */
const isolated = [
	"test/unit/confined.test.ts",
	"test/unit/sealed-node.test.ts",
	"test/unit/spec-per-config.test.ts",
	"test/unit/relay-credentials.test.ts",
	"test/e2e/sandbox.test.ts",
	// Starts a gateway whose sandbox probe fails (a weak bwrap first on PATH): an app made after it
	// in the same process without a start of its own would take that probe's answer.
	"test/e2e/sandbox-probe.test.ts",
	"test/e2e/relay-own-keys.test.ts",
	"test/e2e/own-keys-attacker.test.ts",
	"test/e2e/cluster-own-keys.test.ts",
	"test/e2e/relay-requests.test.ts",
	"test/e2e/trust-boundary.test.ts",
];
const include = ["test/**/*.test.ts", "src/**/*.test.ts"];

export default defineConfig({
	test: {
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
		globalSetup: ["test/helpers/compile-cache.ts", "test/helpers/no-leaks.ts"],
		projects: [
			{
				extends: true,
				test: {
					name: "shared",
					include,
					exclude: isolated,
					isolate: false,
					setupFiles: ["test/helpers/env-unchanged.ts"],
				},
			},
			{ extends: true, test: { name: "isolated", include: isolated, isolate: true } },
		],
	},
});
