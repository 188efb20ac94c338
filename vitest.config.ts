import { defineConfig } from "vitest/config";

export default defineConfig({
	test: {
		include: ["test/**/*.test.ts", "src/**/*.test.ts"],
		testTimeout: 30_000,
		hookTimeout: 30_000,
		pool: "forks",
		// Two cores: two files at a time keeps real pi children from starving each other.
		maxWorkers: 2,
		globalSetup: ["test/helpers/no-leaks.ts"],
	},
});
