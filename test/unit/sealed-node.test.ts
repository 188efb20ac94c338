import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { prepareSealedNode, sealedNodeDir, sealedRunner } from "../../src/sessions/process/sealed-node.ts";

const cache = mkdtempSync(join(tmpdir(), "pi-gateway-sealed-"));
// The test files after this one share its worker (vitest.config.ts: isolate false): put it back.
const savedCache = process.env.XDG_CACHE_HOME;
process.env.XDG_CACHE_HOME = cache;
afterAll(() => {
	if (savedCache === undefined) delete process.env.XDG_CACHE_HOME;
	else process.env.XDG_CACHE_HOME = savedCache;
	rmSync(cache, { recursive: true, force: true });
});

describe("the sealed node", () => {
	it("is an execute-only copy of the gateway's node in the cache folder, made again if it goes", () => {
		expect(prepareSealedNode()).toBeUndefined();
		const path = sealedRunner();
		expect(path.startsWith(join(cache, "pi-gateway", "runtime"))).toBe(true);
		expect(sealedNodeDir()).toBe(join(cache, "pi-gateway", "runtime"));
		expect(statSync(path).mode & 0o777).toBe(0o111);
		expect(statSync(path).size).toBe(statSync(process.execPath).size);
		rmSync(path);
		expect(sealedRunner()).toBe(path);
		expect(statSync(path).mode & 0o777).toBe(0o111);
	});
});
