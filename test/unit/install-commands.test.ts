import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

// Every install command the docs give works today (issue 47 item 4): pi-gateway and
// pi-gateway-client are not on the npm registry, so installing either by name gets a 404. A global
// install names a file (the packed tarball) or a git URL; `npx pi-gateway` is a checkout's command
// (npx finds the checkout's own bin) unless `--package=` names the tarball or a git URL; a
// tarball's name carries the version its package.json says. test/e2e/package.test.ts and
// test/e2e/client-packages.test.ts run the tarball installs themselves.

const repo = resolve(import.meta.dirname, "../..");
const version = (file: string) => (JSON.parse(readFileSync(join(repo, file), "utf8")) as { version: string }).version;

function walk(dir: string): string[] {
	return readdirSync(join(repo, dir)).flatMap((name) => {
		const path = `${dir}/${name}`;
		if (name === "node_modules" || name.startsWith(".")) return [];
		return statSync(join(repo, path)).isDirectory() ? walk(path) : [path];
	});
}

/** Where an operator or a client's user reads install commands (the CHANGELOG is history: it keeps what was). */
function pages(): string[] {
	return [
		"README.md",
		...walk("docs").filter((f) => f.endsWith(".md")),
		...walk("deploy").filter((f) => !/\.(png|tgz|tar|gz)$/.test(f)),
		...walk("clients").filter((f) => f.endsWith("README.md")),
		...walk("examples").filter((f) => f.endsWith("README.md")),
	];
}

const installable = (spec: string) =>
	/^(\.{1,2}\/|\/|~\/|file:)/.test(spec) || /\.tgz$/.test(spec) || /^(git\+|git:|github:)/.test(spec);

/** What is wrong with one paragraph's install commands (a paragraph: text between blank lines, a code block included). */
function installProblems(paragraph: string): string[] {
	const problems: string[] = [];
	for (const [command] of paragraph.matchAll(/\bnpm\s+(?:install|i|add)\b[^\n`"]*/g)) {
		const words = command.replace(/#.*/, "").trim().split(/\s+/).slice(2);
		const specs = words.filter((w) => !w.startsWith("-")).map((w) => w.replace(/[;,)]+$/, ""));
		for (const spec of specs.filter((s) => /^pi-gateway(-client)?(@.*)?$/.test(s) && !installable(s)))
			problems.push(`\`${command.trim()}\`: ${spec} is not on the npm registry; name the packed .tgz or a git URL`);
	}
	const checkout = /\bcheckout\b/i.test(paragraph);
	for (const [command] of paragraph.matchAll(/\bnpx\s+(?:--\S+\s+)*pi-gateway\b[^\n`]*/g))
		if (!/--package[= ]/.test(command) && !checkout)
			problems.push(
				`\`${command.trim()}\`: npx finds pi-gateway only in a checkout; say so, or give --package=<tarball or git URL>`,
			);
	if (/"command":\s*"npx"/.test(paragraph) && /"pi-gateway"/.test(paragraph) && !/--package=/.test(paragraph))
		problems.push(
			'an editor entry runs `npx pi-gateway`: give "--package=<tarball or git URL>" or the installed command',
		);
	for (const [name, pkg, v] of paragraph.matchAll(/\b(pi-gateway(?:-client)?)-(\d+\.\d+\.\d+)\.tgz/g)) {
		const want = version(pkg === "pi-gateway" ? "package.json" : "clients/typescript/package.json");
		if (v !== want) problems.push(`${name}: the package is ${pkg}@${want}`);
	}
	return problems;
}

describe("install commands in the docs", () => {
	it.each(pages())("%s gives only install commands that work today", (file) => {
		const text = readFileSync(join(repo, file), "utf8");
		const problems = text.split(/\n\s*\n/).flatMap((paragraph) => {
			const line = text.slice(0, text.indexOf(paragraph)).split("\n").length;
			return installProblems(paragraph).map((p) => `${relative(repo, join(repo, file))}:${line}: ${p}`);
		});
		expect(problems).toEqual([]);
	});

	it("refuses what an operator could not run", () => {
		const v = version("package.json");
		expect(installProblems("npm install -g pi-gateway      # Node >= 22.19")).toHaveLength(1);
		expect(installProblems("#   npm install -g pi-gateway            (puts /usr/local/bin/pi-gateway)")).toHaveLength(
			1,
		);
		expect(installProblems("npm i pi-gateway-client")).toHaveLength(1);
		expect(installProblems('"command": "npx",\n"args": ["pi-gateway", "acp"]')).toHaveLength(1);
		expect(installProblems("run `npx pi-gateway acp` from your editor")).toHaveLength(1);
		expect(installProblems("npm install -g ./pi-gateway-0.0.1.tgz")).toEqual([
			`pi-gateway-0.0.1.tgz: the package is pi-gateway@${v}`,
		]);
		// What works: a file, a git URL, npx from a checkout or with the tarball.
		expect(installProblems(`npm install -g ./pi-gateway-${v}.tgz`)).toEqual([]);
		expect(installProblems("npm install -g git+https://github.com/earendil-works/pi-gateway.git")).toEqual([]);
		expect(installProblems("in a checkout, `npx pi-gateway keys …`")).toEqual([]);
		expect(installProblems(`npx --yes --package=/tmp/pi-gateway-${v}.tgz pi-gateway acp`)).toEqual([]);
		expect(installProblems("npm install --offline --no-audit ./dist/x.tgz")).toEqual([]);
	});
});
