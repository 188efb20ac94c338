import { execFile } from "node:child_process";
import {
	copyFileSync,
	existsSync,
	mkdirSync,
	mkdtempSync,
	readdirSync,
	readFileSync,
	rmSync,
	writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { noPool, startTestGateway, type TestGateway } from "../helpers/gateway.ts";
import { hasCommand } from "../helpers/host.ts";

// The first-party clients as a user gets them, without the gateway: the TypeScript client built
// and packed as its own npm package, installed into an empty project and run (by the oldest Node
// the machine has: Debian's, when it is there); the Python client built into a wheel by pip with no
// package index (its own standard-library build backend), installed into a fresh venv of Debian's
// python3, and run. Each runs a prompt in wait mode against a live gateway (real pi, demo model),
// and the example of its README (clients/typescript/README.md, clients/python/README.md) as written,
// with only the gateway's address changed: it must import, print what it says and exit.
const run = promisify(execFile);
const repo = resolve(import.meta.dirname, "../..");
const work = mkdtempSync(join(tmpdir(), "client-packages-"));
let gw: TestGateway;

beforeAll(async () => {
	gw = await startTestGateway(noPool);
});
afterAll(async () => {
	await gw?.stop();
	rmSync(work, { recursive: true, force: true });
});

const systemNode = existsSync("/usr/bin/node") ? "/usr/bin/node" : process.execPath;
const debianPython = existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
const live = () => ({ ...process.env, GATEWAY_URL: gw.url, GATEWAY_TOKEN: gw.config.token ?? "" });

/** The first fenced block of `lang` in a client's README, pointed at the test gateway. */
function readmeExample(file: string, lang: string, nth = 0): string {
	const text = readFileSync(join(repo, file), "utf8");
	const block = [...text.matchAll(new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``, "g"))][nth]?.[1];
	if (!block) throw new Error(`${file} has no ${lang} block`);
	expect(block).toContain("http://127.0.0.1:8787");
	return block.replaceAll("http://127.0.0.1:8787", gw.url);
}

describe("the TypeScript client as its own package", () => {
	it("builds, packs with only its own files, installs into an empty project without a warning and runs", async () => {
		const staging = join(work, "pi-gateway-client");
		mkdirSync(staging);
		for (const file of ["package.json", "README.md"])
			copyFileSync(join(repo, "clients/typescript", file), join(staging, file));
		await run(join(repo, "node_modules/.bin/tsc"), [
			"-p",
			join(repo, "clients/typescript/tsconfig.package.json"),
			"--outDir",
			join(staging, "dist"),
		]);
		const packed = await run("npm", ["pack", "--json", "--pack-destination", work, staging], { cwd: work });
		const [info] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
		const files = (info?.files ?? []).map((f) => f.path);
		expect(files).toEqual(expect.arrayContaining(["package.json", "README.md", "dist/index.js", "dist/index.d.ts"]));
		expect(files.filter((f) => !/^(package\.json|README\.md|dist\/.+\.(js|d\.ts))$/.test(f))).toEqual([]);

		const project = join(work, "app");
		mkdirSync(project);
		writeFileSync(join(project, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
		const installed = await run(
			"npm",
			["install", "--offline", "--no-audit", "--no-fund", join(work, info?.filename ?? "")],
			{
				cwd: project,
			},
		);
		expect(installed.stderr).toBe("");
		// Nothing of the gateway came along: the client has no dependencies.
		expect(readdirSync(join(project, "node_modules")).filter((d) => !d.startsWith("."))).toEqual(["pi-gateway-client"]);
		writeFileSync(
			join(project, "main.js"),
			`import { PiGateway } from "pi-gateway-client";
const gw = new PiGateway({ baseUrl: process.env.GATEWAY_URL, token: process.env.GATEWAY_TOKEN });
const session = await gw.createSession({ name: "from-the-package" });
const result = await gw.promptAndWait(session.id, { message: "echo: hello from the package" }, { seconds: 60 });
console.log(process.version.split(".")[0], result.text);
await gw.deleteSession(session.id);
`,
		);
		const { stdout } = await run(systemNode, ["main.js"], { cwd: project, env: live(), timeout: 60_000 });
		expect(stdout).toMatch(/^v\d+ hello from the package\n$/);

		// The README's example, run as it stands (it is JavaScript too) by the oldest Node: it imports the
		// package by its own name, answers the permission gate's dialog and exits (its long-poll stopped).
		writeFileSync(join(project, "readme.mjs"), readmeExample("clients/typescript/README.md", "ts"));
		const before = (await gw.api("/v1/sessions")).body.sessions.length;
		const example = await run(systemNode, ["readme.mjs"], {
			cwd: project,
			env: { ...live(), PI_GATEWAY_TOKEN: gw.config.token ?? "" },
			timeout: 60_000,
		});
		expect(example.stdout).toBe('The command finished. Output:\nremoved\nanswered: {"value":"Allow"}\n');
		expect((await gw.api("/v1/sessions")).body.sessions.length).toBe(before);
	}, 180_000);
});

describe.skipIf(!hasCommand("python3"))("the Python client as a wheel", () => {
	it("pip builds it with no index and no setuptools, installs it into a fresh venv and it runs", async () => {
		const venv = join(work, "venv");
		await run(debianPython, ["-m", "venv", venv], { timeout: 120_000 });
		const python = join(venv, "bin/python");
		const wheels = join(work, "wheels");
		// A copy: pip must leave the source tree as it found it.
		const source = join(work, "python-src");
		await run("cp", ["-r", join(repo, "clients/python"), source]);
		await run(python, ["-m", "pip", "wheel", "-q", "--no-deps", "--no-index", "-w", wheels, source], {
			cwd: work,
			timeout: 120_000,
		});
		const wheel = readdirSync(wheels).find((f) => f.endsWith(".whl"));
		expect(wheel).toMatch(/^pi_gateway_client-[\d.]+-py3-none-any\.whl$/);
		await run(python, ["-m", "pip", "install", "-q", "--no-index", join(wheels, wheel as string)], { cwd: work });
		expect(readdirSync(source).sort()).toEqual(readdirSync(join(repo, "clients/python")).sort());
		const script = [
			"import os, sys, pi_gateway",
			"assert os.path.dirname(pi_gateway.__file__).startswith(sys.prefix), pi_gateway.__file__",
			"gw = pi_gateway.PiGateway(os.environ['GATEWAY_URL'], token=os.environ['GATEWAY_TOKEN'])",
			"s = gw.create_session({'name': 'from-the-wheel'})",
			"r = gw.prompt_and_wait(s['id'], 'echo: hello from the wheel', timeout=60)",
			"print(r['text'])",
			"gw.delete_session(s['id'])",
		].join("\n");
		const { stdout } = await run(python, ["-c", script], { cwd: work, env: live(), timeout: 60_000 });
		expect(stdout).toBe("hello from the wheel\n");

		// The README's two examples as written: each text once (the streamed one, then the waited one).
		const env = { ...live(), PI_GATEWAY_TOKEN: gw.config.token ?? "" };
		const sync = await run(python, ["-c", readmeExample("clients/python/README.md", "python")], {
			cwd: work,
			env,
			timeout: 60_000,
		});
		expect(sync.stdout).toBe("hello\n");
		const aio = await run(python, ["-c", readmeExample("clients/python/README.md", "python", 1)], {
			cwd: work,
			env,
			timeout: 60_000,
		});
		expect(aio.stdout).toBe("1 2 3 4 5\nwaited\n");
	}, 240_000);
});
