import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { moduleFile, packageFile, packageRoot, runsSources } from "../../src/shared/package-files.ts";

// src/shared/package-files.ts finds what ships beside the code from the package's root, the same
// from src/, dist/ and the bundle; the root is the nearest package.json, and it must be pi-gateway's.
const repo = resolve(import.meta.dirname, "../..");
const dirs: string[] = [];
afterAll(() => {
	for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** package-files.ts copied to <tmp>/<below>/package-files.ts, with package.json files as given. */
async function copyAt(below: string, packages: Record<string, string>): Promise<unknown> {
	const root = mkdtempSync(join(tmpdir(), "pi-gateway-package-files-"));
	dirs.push(root);
	for (const [dir, name] of Object.entries(packages)) {
		mkdirSync(join(root, dir), { recursive: true });
		writeFileSync(join(root, dir, "package.json"), JSON.stringify({ name, version: "6.6.6" }));
	}
	mkdirSync(join(root, below), { recursive: true });
	const file = join(root, below, "package-files.ts");
	copyFileSync(join(repo, "src/shared/package-files.ts"), file);
	return import(pathToFileURL(file).href);
}

describe("the package's root", () => {
	it("is the checkout, and the files found from it are the shipped ones", () => {
		expect(packageRoot).toBe(repo);
		expect(runsSources).toBe(true);
		expect(packageFile("extensions/permission-gate.ts")).toBe(join(repo, "extensions/permission-gate.ts"));
		expect(moduleFile("workspace/tool-thread")).toBe(join(repo, "src/workspace/tool-thread.ts"));
	});

	it("is the nearest package.json, named pi-gateway, at any depth", async () => {
		const found = (await copyAt("pkg/dist/chunks", {
			pkg: "pi-gateway",
		})) as typeof import("../../src/shared/package-files.ts");
		expect(found.packageRoot).toMatch(/\/pkg$/);
		expect(found.gatewayVersion).toBe("6.6.6");
	});

	it("is never a pi-gateway package.json further up than another package's (planted in a shared folder)", async () => {
		await expect(copyAt("vendor/app/lib", { "": "pi-gateway", "vendor/app": "someone-else" })).rejects.toThrow(
			/is not pi-gateway's package.json \(its name is "someone-else"\)/,
		);
	});
});
