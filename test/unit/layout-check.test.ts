import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/config.ts";

const dir = mkdtempSync(join(tmpdir(), "pi-gateway-layout-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the data dir and the workspace root never overlap", () => {
	it("refuses a workspace root that contains the data dir, saying what to change", () => {
		const home = join(dir, "home");
		mkdirSync(home);
		expect(() => parseConfig({ workspaceRoot: home, dataDir: join(home, ".pi-gateway") })).toThrow(
			/contains the data dir .*Give --data-dir a folder outside it/,
		);
		expect(() => parseConfig({ workspaceRoot: home, dataDir: home })).toThrow(/contains the data dir/);
	});

	it("sees through a link: a root reached by another name is the same root", () => {
		const real = join(dir, "real");
		mkdirSync(join(real, "data"), { recursive: true });
		symlinkSync(real, join(dir, "alias"));
		expect(() => parseConfig({ workspaceRoot: join(dir, "alias"), dataDir: join(real, "data") })).toThrow(
			/contains the data dir/,
		);
	});

	it("refuses a root among the data dir's own files, but not the default <data-dir>/workspaces", () => {
		const data = join(dir, "d2");
		expect(() => parseConfig({ workspaceRoot: join(data, "snapshots"), dataDir: data })).toThrow(
			/lies inside the data dir/,
		);
		expect(parseConfig({ dataDir: data }).workspaceRoot).toBe(join(data, "workspaces"));
		expect(parseConfig({ workspaceRoot: join(data, "workspaces"), dataDir: data }).workspaceRoot).toBe(
			join(data, "workspaces"),
		);
	});

	it("takes folders side by side", () => {
		expect(parseConfig({ workspaceRoot: join(dir, "w"), dataDir: join(dir, "d") }).workspaceRoot).toBe(join(dir, "w"));
	});
});
