import { existsSync, readdirSync, readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

// README's first command installs what running needs, `npm ci --omit=dev` (issue 45 item 5): so
// every package the running gateway loads must be in dependencies, never only in devDependencies,
// or `npm start` after that install fails at the first import of it (perhaps only on the one route
// that needs it). Read from the code itself: the files `npm start` (src/main.ts) and the pi
// extensions it hands pi (extensions/) reach through their imports, type-only ones left out.
// And the other way: a dependency nothing there loads is weight every install carries.

const repo = resolve(import.meta.dirname, "../..");
const pkg = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as {
	dependencies: Record<string, string>;
	devDependencies: Record<string, string>;
};
const builtins = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));

/** The package a bare specifier names (`@scope/name/sub` → `@scope/name`). */
const packageOf = (spec: string) =>
	spec
		.split("/")
		.slice(0, spec.startsWith("@") ? 2 : 1)
		.join("/");

/** What a file loads when it runs: static and dynamic imports, re-exports, import.meta.resolve, createRequire's. */
function loadedSpecifiers(text: string): string[] {
	// Comments out first (an import in a comment is not one); strings stay, which is where specifiers are.
	const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");
	const specs: string[] = [];
	const patterns = [
		// import x from "m"; import { a } from "m"; export { a } from "m"; export * from "m" (not `import type`/`export type`)
		/(?:^|[\s;])(?:import|export)\s+(?!type\s)(?:[\w*${}\s,]+?\s+from\s+)?["']([^"']+)["']/g,
		/\bimport\(\s*["']([^"']+)["']\s*\)/g,
		/\bimport\.meta\.resolve\(\s*["']([^"']+)["']\s*\)/g,
		/\brequire(?:\.resolve)?\(\s*["']([^"']+)["']\s*\)/g,
		/createRequire\([^)]*\)(?:\.resolve)?\(\s*["']([^"']+)["']\s*\)/g,
	];
	for (const pattern of patterns) for (const match of code.matchAll(pattern)) specs.push(match[1] as string);
	return specs;
}

/** Every bare package the files reachable from `entries` load, with the first file that loads it. */
function runtimePackages(entries: string[]): Map<string, string> {
	const seen = new Set<string>();
	const packages = new Map<string, string>();
	const queue = [...entries];
	while (queue.length > 0) {
		const file = queue.shift() as string;
		if (seen.has(file)) continue;
		seen.add(file);
		for (const spec of loadedSpecifiers(readFileSync(file, "utf8"))) {
			if (builtins.has(spec) || spec.startsWith("node:")) continue;
			if (spec.startsWith(".")) {
				const target = resolve(dirname(file), spec);
				if (/\.(ts|mts|js|mjs|cjs)$/.test(target) && existsSync(target)) queue.push(target);
				continue;
			}
			const name = packageOf(spec);
			if (!packages.has(name)) packages.set(name, relative(repo, file));
		}
	}
	return packages;
}

const extensions = readdirSync(join(repo, "extensions"))
	.filter((name) => /\.(ts|mjs)$/.test(name))
	.map((name) => join(repo, "extensions", name));
const loaded = runtimePackages([join(repo, "src/main.ts"), join(repo, "bin/pi-gateway.js"), ...extensions]);

describe("what running needs is what npm ci --omit=dev installs", () => {
	it("loads no package that is only a devDependency (or in neither list)", () => {
		const missing = [...loaded]
			.filter(([name]) => !(name in pkg.dependencies))
			.map(
				([name, file]) => `${name} (first loaded by ${file})${name in pkg.devDependencies ? ": a devDependency" : ""}`,
			);
		expect(missing).toEqual([]);
	});

	it("carries no dependency that nothing the gateway runs loads", () => {
		const unused = Object.keys(pkg.dependencies).filter((name) => !loaded.has(name));
		expect(unused).toEqual([]);
	});

	it("reads a file's loads as Node does: type-only imports and comments are not loads", () => {
		const text = [
			'import type { A } from "types-only";',
			'import { type B, c } from "mixed";',
			'export * from "./re-export.ts";',
			'// import x from "commented";',
			'const m = await import("dynamic");',
			'const dir = import.meta.resolve("resolved");',
			'const v = createRequire(import.meta.url)("required/package.json");',
			'const url = "http://example.com/not-a-comment";',
		].join("\n");
		expect(loadedSpecifiers(text).sort()).toEqual(
			["./re-export.ts", "dynamic", "mixed", "required/package.json", "resolved"].sort(),
		);
	});
});
