import { type ChildProcess, execFile, spawn } from "node:child_process";
import {
	copyFileSync,
	existsSync,
	mkdirSync,
	mkdtempSync,
	readdirSync,
	readFileSync,
	rmSync,
	symlinkSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { alive, until } from "../helpers/gateway.ts";

// The package as a user gets it: `npm pack` (its prepack script builds dist/), then `npm i -g` of the
// tarball into a temporary prefix, then the installed `pi-gateway` binary, which must run from
// under node_modules, where Node refuses to strip TypeScript types. The dependencies come from
// npm's cache (filled by `npm ci`) wherever it has them. These are README.md's install commands
// ("Installing the package": the package is not on the registry, so the tarball is the way), and
// the installed `pi-gateway acp` is run as docs/editors.md's Zed entry says.
const run = promisify(execFile);
const repo = resolve(import.meta.dirname, "../..");
const env = { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH}` };

let tmp: string;
let tarball: string;
let bin: string;
let gateway: ChildProcess | undefined;

beforeAll(async () => {
	tmp = mkdtempSync(join(tmpdir(), "pi-gateway-package-"));
	// Packed from a copy of the checkout (its files, with node_modules linked): prepack's build
	// starts with `rm -rf dist`, and the rest of the suite runs this checkout's dist/ meanwhile (the
	// bin's bundle, the console).
	const checkout = join(tmp, "checkout");
	const listed = await run("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
		cwd: repo,
		maxBuffer: 64 * 1024 * 1024,
	});
	for (const file of listed.stdout.split("\0").filter(Boolean)) {
		if (!existsSync(join(repo, file))) continue;
		mkdirSync(dirname(join(checkout, file)), { recursive: true });
		copyFileSync(join(repo, file), join(checkout, file));
	}
	symlinkSync(join(repo, "node_modules"), join(checkout, "node_modules"));
	await run("npm", ["pack", "--silent", "--pack-destination", tmp], { cwd: checkout, env, timeout: 240_000 });
	const name = readdirSync(tmp).find((f) => f.endsWith(".tgz"));
	if (!name) throw new Error("npm pack made no tarball");
	tarball = join(tmp, name);
	const prefix = join(tmp, "prefix");
	const install = (mode: string) =>
		run("npm", ["install", "--global", "--prefix", prefix, tarball, mode, "--no-audit", "--no-fund", "--silent"], {
			cwd: tmp,
			env,
			timeout: 240_000,
		});
	// From npm's cache alone when it holds every package's metadata (after one online install);
	// else the metadata comes from the registry and the tarballs from the cache where it has them.
	await install("--offline").catch(() => install("--prefer-offline"));
	bin = join(prefix, "bin", "pi-gateway");
}, 480_000);

afterAll(async () => {
	if (gateway && gateway.exitCode === null) {
		const exited = new Promise((r) => gateway?.once("exit", r));
		gateway.kill("SIGKILL");
		await exited;
	}
	// The global install under tmp is the package and its whole dependency tree (22,000 files, 243 MB):
	// at a load of 27 on 2 cores this hook ran out of the default 30 s removing it, after every test passed.
	if (tmp) rmSync(tmp, { recursive: true, force: true });
}, 180_000);

describe("the npm package", () => {
	it("ships compiled JavaScript, the extensions and the spec, not the TypeScript sources", async () => {
		const { stdout } = await run("tar", ["tzf", tarball]);
		const files = stdout.trim().split("\n");
		for (const file of [
			"package/bin/pi-gateway.js",
			// What the bin runs: the server bundled (scripts/bundle.ts; its chunks are in dist/chunks),
			// and the worker threads it starts from tsc's output beside it.
			"package/dist/pi-gateway.mjs",
			"package/dist/workspace/tool-thread.js",
			"package/dist/cluster/fence-watchdog.js",
			"package/dist/sessions/process/spawn.js",
			// The client the ACP bridge and the cluster hub read the gateway with, and pi-gateway/client.
			"package/dist/client/index.js",
			"package/dist/client/index.d.ts",
			"package/extensions/demo-model.ts",
			"package/extensions/permission-gate.ts",
			"package/openapi.yaml",
			"package/LICENSE",
			"package/CHANGELOG.md",
			// The documentation README.md links into (issue 25).
			"package/README.md",
			"package/docs/events.md",
			"package/docs/console.png",
			// The console, built (issue 23).
			"package/dist/console/index.html",
			"package/dist/console/console.js",
			"package/dist/console/console.css",
		]) {
			expect(files, file).toContain(file);
		}
		expect(files.filter((f) => f.startsWith("package/src/") || f.startsWith("package/test/"))).toEqual([]);
	});

	it("is the tarball README.md's install commands name", () => {
		const readme = readFileSync(join(repo, "README.md"), "utf8");
		const block = /## Installing the package[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? "";
		const commands = block.split("\n").map((line) => line.replace(/\s+#.*$/, ""));
		expect(commands.slice(0, 2)).toEqual(["npm pack", `npm install -g ./${tarball.split("/").pop()}`]);
	});

	it("runs no install script of its own (npm 11 lists each one a user must approve)", async () => {
		const { stdout } = await run("tar", ["xzf", tarball, "-O", "package/package.json"]);
		const scripts = Object.keys((JSON.parse(stdout) as { scripts?: Record<string, string> }).scripts ?? {});
		expect(scripts.filter((s) => /^(pre|post)?install$|^prepare$/.test(s))).toEqual([]);
	});

	it("the installed binary prints its help", async () => {
		const { stdout } = await run(bin, ["--help"], { env, timeout: 60_000 });
		expect(stdout).toMatch(/^pi-gateway — HTTP REST \+ SSE for pi's RPC mode\n\nUsage: pi-gateway \[options\]/);
	}, 60_000);

	it("the installed binary serves a real session (pi, demo model, permission gate) and stops cleanly", async () => {
		const home = join(tmp, "home");
		mkdirSync(join(home, "workspace"), { recursive: true });
		mkdirSync(join(home, "agent"), { recursive: true });
		const token = "package-test-token-0123456789";
		gateway = spawn(
			bin,
			[
				"--port",
				"0",
				"--workspace-root",
				join(home, "workspace"),
				"--data-dir",
				join(home, "data"),
				"--pi-agent-dir",
				join(home, "agent"),
			],
			{ env: { ...env, PI_GATEWAY_TOKEN: token }, stdio: ["ignore", "pipe", "pipe"] },
		);
		let out = "";
		gateway.stdout?.on("data", (chunk) => {
			out += chunk;
		});
		gateway.stderr?.on("data", (chunk) => {
			out += chunk;
		});
		const url = await until(
			() => /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(out)?.[1] ?? gateway?.exitCode !== null,
			60_000,
		);
		expect(url, out).toMatch(/^http:/);
		const api = async (path: string, json?: unknown) => {
			const res = await fetch(`${url}${path}`, {
				method: json === undefined ? "GET" : "POST",
				headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
				body: json === undefined ? undefined : JSON.stringify(json),
			});
			return { status: res.status, body: (await res.json()) as any };
		};
		const created = await api("/v1/sessions", { name: "packaged", extensions: ["permission-gate"] });
		expect(created.status, JSON.stringify(created.body)).toBe(201);
		expect(created.body.model).toEqual({ provider: "pi-gateway-demo", id: "demo" });
		const waited = await api(`/v1/sessions/${created.body.id}/prompt?wait=true`, { message: "echo: from the package" });
		expect([waited.status, waited.body.text]).toEqual([200, "from the package"]);
		// The bundle carries the API document its build generated: the same as the routes give
		// (openapi.yaml, checked against them by spec:check), but for the origin it is served from.
		const served = (await (await fetch(`${url}/openapi.json`)).json()) as { servers: unknown };
		const spec = parse(readFileSync(join(repo, "openapi.yaml"), "utf8")) as { servers: unknown };
		expect(served.servers).toEqual([{ url }]);
		expect({ ...served, servers: [] }).toEqual({ ...spec, servers: [] });
		// The docs page, from swagger-ui-dist (which stays a dependency outside the bundle).
		const docs = await fetch(`${url}/docs/swagger-ui-bundle.js`);
		expect([docs.status, (await docs.text()).length > 100_000]).toEqual([200, true]);
		// The console the package ships, served with its CSP, no token needed for the page itself.
		const page = await fetch(`${url}/console/`);
		expect(page.status).toBe(200);
		expect(page.headers.get("content-security-policy")).toContain("default-src 'self'");
		expect(await page.text()).toContain('src="./console.js?v=');
		// The installed `pi-gateway acp` (its client in dist/client/) runs a prompt on this gateway.
		expect(await bridgePrompt(String(url), token, "echo: from the packaged bridge")).toEqual({
			stopReason: "end_turn",
			text: "from the packaged bridge",
		});

		const exited = new Promise<number | null>((r) => gateway?.once("exit", (code) => r(code)));
		gateway.kill("SIGTERM");
		expect(await exited).toBe(0);
		expect(alive(created.body.pid)).toBe(false);
	}, 120_000);
});

/** docs/editors.md's Zed entry: the command the editor runs and its arguments. */
function editorEntry(): { command: string; args: string[] } {
	const page = readFileSync(join(repo, "docs/editors.md"), "utf8");
	const json = /```json\n([\s\S]*?)```/.exec(page)?.[1] ?? "{}";
	const servers = (JSON.parse(json) as { agent_servers: Record<string, { command: string; args: string[] }> })
		.agent_servers;
	return Object.values(servers)[0] as { command: string; args: string[] };
}

/**
 * `pi-gateway acp` from the installed package, as an editor speaks to it (the command and arguments
 * of docs/editors.md's entry, the gateway's URL in place of its example): initialize, session/new,
 * one prompt.
 */
async function bridgePrompt(url: string, token: string, message: string) {
	const entry = editorEntry();
	expect(entry.command).toBe("pi-gateway");
	const args = entry.args.map((a) => (a === "https://gw.example" ? url : a));
	expect(args).toContain(url);
	const child = spawn(bin, args, {
		env: { ...env, PI_GATEWAY_TOKEN: token },
		stdio: ["pipe", "pipe", "pipe"],
	});
	let out = "";
	let err = "";
	child.stdout.on("data", (chunk) => {
		out += chunk;
	});
	child.stderr.on("data", (chunk) => {
		err += chunk;
	});
	const lines = () =>
		out
			.split("\n")
			.filter(Boolean)
			.map((line) => JSON.parse(line));
	const call = async (id: number, method: string, params: unknown) => {
		child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
		const answer = await until(() => lines().find((m) => m.id === id) ?? child.exitCode !== null, 60_000);
		if (answer === true || answer.error) throw new Error(`${method}: ${JSON.stringify(answer)} ${err}`);
		return answer.result;
	};
	try {
		await call(1, "initialize", { protocolVersion: 1 });
		const { sessionId } = await call(2, "session/new", { cwd: "/tmp", mcpServers: [] });
		const { stopReason } = await call(3, "session/prompt", { sessionId, prompt: [{ type: "text", text: message }] });
		const text = lines()
			.filter((m) => m.method === "session/update" && m.params.update.sessionUpdate === "agent_message_chunk")
			.map((m) => m.params.update.content.text)
			.join("");
		return { stopReason, text };
	} finally {
		const exited = new Promise((r) => child.once("exit", r));
		child.stdin.end(); // an editor closing the pipe ends the bridge
		await exited;
	}
}
