import { describe, expect, it } from "vitest";
import { parsePrefer, requestedWait } from "../../src/http/transport/wait.ts";

describe("Prefer (RFC 7240)", () => {
	it("parses names case-insensitively, unquotes values, ignores params, keeps the first instance", () => {
		const prefs = parsePrefer('respond-async, WAIT="10"; foo=bar, wait=3, return=minimal');
		expect([...prefs]).toEqual([
			["respond-async", ""],
			["wait", "10"],
			["return", "minimal"],
		]);
		expect(parsePrefer(undefined).size).toBe(0);
	});
});

describe("requestedWait", () => {
	const max = 300_000;
	it("Prefer: wait=N waits N seconds (capped) and is echoed in Preference-Applied", () => {
		expect(requestedWait("wait=5", undefined, max)).toEqual({ ms: 5000, applied: "wait=5" });
		expect(requestedWait("respond-async, wait=9999", undefined, max)).toEqual({ ms: max, applied: "wait=9999" });
		expect(requestedWait("wait=0", undefined, max)).toEqual({ ms: 0, applied: "wait=0" });
	});
	it("a bare Prefer: wait waits as long as the gateway allows", () => {
		expect(requestedWait("wait", undefined, max)).toEqual({ ms: max, applied: "wait" });
	});
	it("?wait=true|N|false, with no Preference-Applied", () => {
		expect(requestedWait(undefined, "true", max)).toEqual({ ms: max });
		expect(requestedWait(undefined, "7", max)).toEqual({ ms: 7000 });
		expect(requestedWait(undefined, "false", max)).toBeUndefined();
		expect(requestedWait(undefined, undefined, max)).toBeUndefined();
	});
	it("the header wins over the query; a malformed wait preference is ignored", () => {
		expect(requestedWait("wait=2", "true", max)).toEqual({ ms: 2000, applied: "wait=2" });
		expect(requestedWait("wait=soon", undefined, max)).toBeUndefined();
		expect(requestedWait("wait=-1", "4", max)).toEqual({ ms: 4000 });
		expect(requestedWait("respond-async", undefined, max)).toBeUndefined();
	});
});
