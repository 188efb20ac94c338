import { describe, expect, it } from "vitest";
import { chooseEncoding } from "../../src/http/routes/console/encoding.ts";

// Which of the console's precompressed bodies GET /console/… sends for an Accept-Encoding.
describe("the console's content encoding", () => {
	it.each([
		[undefined, "identity"],
		["", "identity"],
		["gzip, deflate, br, zstd", "br"],
		["gzip, deflate", "gzip"],
		["GZIP", "gzip"],
		["x-gzip", "gzip"],
		["br;q=0, gzip;q=0.5", "gzip"],
		["br;q=0,gzip;q=0", "identity"],
		["*", "br"],
		["*;q=0.1, br;q=0", "gzip"],
		["identity", "identity"],
		["deflate", "identity"],
		["br ; q=0.001", "br"],
		["gzip;q=1.000", "gzip"],
		["gzip;q=0.000", "identity"],
	] as const)("%s → %s", (header, expected) => {
		expect(chooseEncoding(header)).toBe(expected);
	});
});
