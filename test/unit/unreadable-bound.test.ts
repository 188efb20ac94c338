import { describe, expect, it } from "vitest";
import { boundedUnreadable } from "../../src/workspace/snapshot-manifest.ts";

describe("boundedUnreadable", () => {
	it("keeps the first 100 paths, in the order given (tracked files come first)", () => {
		const paths = Array.from({ length: 150 }, (_, i) => `aa/c${i}`);
		const kept = boundedUnreadable(["zz_config.sh", ...paths]);
		expect(kept).toHaveLength(100);
		expect(kept[0]).toBe("zz_config.sh");
		expect(kept[99]).toBe("aa/c98");
	});

	it("stops before 16 KiB of names", () => {
		const kept = boundedUnreadable(
			Array.from({ length: 50 }, (_, i) => `${String(i).padStart(2, "0")}${"x".repeat(1000)}`),
		);
		expect(kept).toHaveLength(16);
		expect(kept.join("").length).toBeLessThanOrEqual(16 * 1024);
	});
});
