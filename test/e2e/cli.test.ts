import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ConfigSchema } from "../../src/config/config.ts";
import { createKey } from "../../src/http/auth/keys.ts";
import { startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { gatewayEntry } from "../helpers/gateway-entry.ts";
import { type GatewayProcess, killAll, launchGateway } from "../helpers/gateway-process.ts";

// The CLI as a user meets it: what --help promises, and the lines printed at start about the token.
// Each test runs the bin (a node process reading the whole src/) several times: 2 s each on a quiet
// machine, 4–5 s while the rest of the suite loads both cores, so 30 s is a bound a busy run misses.
vi.setConfig({ testTimeout: 120_000 });

const repo = resolve(import.meta.dirname, "../..");
const run = promisify(execFile);
const main = (args: string[]) => run(process.execPath, [gatewayEntry, ...args], { cwd: repo });

let gw: TestGateway;
let root: string;
const launched: ChildProcess[] = [];
const processes: GatewayProcess[] = [];
beforeAll(async () => {
	gw = await startTestGateway();
	root = mkdtempSync(join(tmpdir(), "pi-gateway-cli-"));
});
afterAll(async () => {
	killAll(processes);
	for (const child of launched) {
		if (child.exitCode !== null || child.signalCode !== null) continue;
		if (child.spawnargs[0] === "npm") process.kill(-(child.pid as number), "SIGKILL");
		else child.kill("SIGKILL");
	}
	await gw?.stop();
	rmSync(root, { recursive: true, force: true });
});

/** Starts the CLI on a free port and returns what it printed on stderr once it listens. */
async function start(args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
	return (await launch(args, env)).err;
}

/**
 * Starts the CLI (or `npm start --silent --` with `viaNpm`) on a free port; once it listens,
 * stops it and returns what it printed on stdout and stderr.
 */
async function launch(
	args: string[],
	env: NodeJS.ProcessEnv = {},
	viaNpm = false,
	listening = '"pi-gateway listening"',
): Promise<{ out: string; err: string }> {
	const [command, ...prefix] = viaNpm ? ["npm", "start", "--silent", "--"] : [process.execPath, gatewayEntry];
	const child = spawn(command as string, [...prefix, "--port", "0", ...args], {
		cwd: repo,
		env: { ...process.env, ...env },
		stdio: ["ignore", "pipe", "pipe"],
		// npm → sh → node: a group of its own, so a failed test's cleanup reaches the gateway too.
		detached: viaNpm,
	});
	launched.push(child);
	let out = "";
	let err = "";
	child.stdout?.on("data", (c) => {
		out += c;
	});
	child.stderr?.on("data", (c) => {
		err += c;
	});
	await until(() => out.includes(listening) && err.includes("pi-gateway: listening on"), 20_000);
	// The gateway itself, by the pid it logs: npm would not pass a SIGTERM on to it.
	const pid = viaNpm ? Number(/"pid":(\d+)/.exec(out)?.[1]) : (child.pid as number);
	process.kill(pid, "SIGTERM");
	await new Promise((r) => child.once("exit", r));
	return { out, err };
}

describe("--help", () => {
	it("names exactly the paths that answer without the token", async () => {
		const { stdout } = await main(["--help"]);
		const line = stdout.split("\n").find((l) => l.includes("--token <value>")) as string;
		const candidates = ["/healthz", "/readyz", "/openapi.json", "/openapi.yaml", "/docs", "/metrics", "/v1/info"];
		for (const path of candidates) {
			const res = await fetch(gw.url + (path === "/docs" ? "/docs/" : path));
			const named = new RegExp(`${path.replace(".", "\\.")}\\b`).test(line);
			expect(named, `${path} (HTTP ${res.status}) in: ${line}`).toBe(res.status !== 401);
		}
	});
});

describe("the token at start", () => {
	it("with none given: generated in <data-dir>/token, mode 0600, and said where", async () => {
		const dataDir = join(root, "gen");
		const err = await start(["--data-dir", dataDir, "--workspace-root", join(root, "gen-ws")]);
		const file = join(dataDir, "token");
		expect(err).toContain(`pi-gateway: bearer token in ${file} (generated now, kept for the next start)`);
		expect(err).toContain(`curl -H "Authorization: Bearer $(cat ${file})"`);
		const token = readFileSync(file, "utf8").trim();
		expect(err).not.toContain(token);
		// The next start reuses it.
		expect(await start(["--data-dir", dataDir, "--workspace-root", join(root, "gen-ws")])).not.toContain(
			"generated now",
		);
		expect(readFileSync(file, "utf8").trim()).toBe(token);
	});

	it("--token on argv works, with a warning that /proc shows it", async () => {
		const err = await start(["--data-dir", join(root, "argv"), "--token", "argv-token-0123456789abc"]);
		expect(err).toMatch(/WARNING: --token on the command line is readable .*\/proc\/<pid>\/cmdline/);
	});

	it("--no-auth: loopback only, and loudly", async () => {
		const err = await start(["--data-dir", join(root, "open"), "--no-auth"]);
		expect(err).toContain("WARNING: --no-auth");
		const refused = await main(["--no-auth", "--host", "0.0.0.0", "--data-dir", join(root, "open2")]).catch((e) => e);
		expect(refused.code).toBe(2);
		expect(refused.stderr).toContain("Refusing to listen on 0.0.0.0 with --no-auth");
	});
});

describe("the default folder at start", () => {
	it("says where sessions without cwd work: a folder of their own in their principal's area, or the area given", async () => {
		const dataDir = join(root, "folders");
		const workspaces = join(dataDir, "workspaces");
		const own = await start(["--data-dir", dataDir]);
		expect(own).toContain(
			`pi-gateway: sessions without cwd work in a folder of their own, ${workspaces}/@<principal>/<session id> (an admin's: ${workspaces}/<session id>)`,
		);
		const ws = join(root, "shared-ws");
		mkdirSync(ws);
		const shared = await start(["--data-dir", dataDir, "--workspace-root", ws]);
		expect(shared).toContain(
			`pi-gateway: sessions without cwd work in their principal's folder ${ws}/@<principal> (an admin's: the root ${ws}), all of one principal in the same folder`,
		);
	});

	it("refuses a workspace root that contains the data dir, saying which flag to change", async () => {
		const refused = await main(["--data-dir", join(root, "inside"), "--workspace-root", root]).catch((e) => e);
		expect(refused.code).not.toBe(0);
		expect(refused.stderr).toContain(`--workspace-root ${realpathSync(root)} contains the data dir`);
		expect(refused.stderr).toContain("Give --data-dir a folder outside it");
	});
});

describe("--version", () => {
	it("prints package.json's version and exits 0", async () => {
		const { stdout } = await main(["--version"]);
		expect(stdout.trim()).toBe(JSON.parse(readFileSync(join(repo, "package.json"), "utf8")).version);
	});
});

describe("keys", () => {
	it("--help prints the usage of create, list and revoke and exits 0", async () => {
		const { stdout } = await main(["keys", "--help"]);
		for (const verb of ["create", "list", "revoke"]) expect(stdout).toContain(`pi-gateway keys ${verb}`);
	});

	it("list shows names, scopes and dates, never a secret or hash; revoke stops the key in the running gateway", async () => {
		const file = join(root, "keys.json");
		const withKeys = await startTestGateway({ keysFile: file });
		try {
			const secret = (
				await main(["keys", "create", "--principal", "alice", "--scopes", "sessions:read", "--keys-file", file])
			).stdout.trim();
			await main(["keys", "create", "--principal", "bob", "--scopes", "approvals:read", "--keys-file", file]);
			const whoami = () =>
				withKeys.fetch("/v1/whoami", { headers: { authorization: `Bearer ${secret}` } }).then((r) => r.status);
			await until(async () => (await whoami()) === 200);

			const { stdout: table } = await main(["keys", "list", "--keys-file", file]);
			const lines = table.trim().split("\n");
			expect(lines[0]).toMatch(/^ID\s+PRINCIPAL\s+SCOPES\s+CREATED\s+EXPIRES$/);
			expect(lines).toHaveLength(3);
			expect(lines[1]).toMatch(/^key_[0-9a-f]+\s+alice\s+sessions:read\s+\d{4}-\d\d-\d\dT\S+\s+never$/);
			expect(table).not.toContain(secret);
			expect(table).not.toContain("sha256:");
			const listed = JSON.parse((await main(["keys", "list", "--json", "--keys-file", file])).stdout);
			expect(listed.map((k: { principal: string }) => k.principal)).toEqual(["alice", "bob"]);
			expect(Object.keys(listed[0]).sort()).toEqual(["createdAt", "id", "principal", "providerKeys", "scopes"]);
			expect(listed[0].providerKeys).toEqual([]);

			const revoked = await main(["keys", "revoke", "alice", "--keys-file", file]);
			expect(revoked.stderr).toContain(`key ${listed[0].id} of alice revoked in ${file}`);
			await until(async () => (await whoami()) === 401, 5_000);
			const after = JSON.parse((await main(["keys", "list", "--json", "--keys-file", file])).stdout);
			expect(after.map((k: { principal: string }) => k.principal)).toEqual(["bob"]);
			const missing = await main(["keys", "revoke", "alice", "--keys-file", file]).catch((e) => e);
			expect(missing.code).toBe(2);
			expect(missing.stderr).toContain('no key with the id or principal "alice"');
		} finally {
			await withKeys.stop();
		}
	});
});

describe("the log at start", () => {
	const files = () => {
		const dir = join(root, "files");
		const keysFile = join(dir, "keys.json");
		const policies = join(dir, "policies.yaml");
		const webhooks = join(dir, "webhooks.json");
		mkdirSync(dir, { recursive: true });
		createKey(keysFile, "alice", ["sessions:read"]);
		createKey(keysFile, "bob", ["sessions:read"]);
		writeFileSync(policies, "rules:\n  - name: ls-ok\n    match:\n      title: ls\n    action: allow\n");
		const secret = `whsec_${Buffer.alloc(32, 7).toString("base64")}`;
		writeFileSync(
			webhooks,
			JSON.stringify([{ id: "ops", url: "https://hooks.example.com/pi", events: ["session.crashed"], secret }]),
		);
		return { keysFile, policies, webhooks };
	};

	it("stdout is only the JSON log (also through npm start --silent); stderr says which files it loaded and where /docs and /console are", async () => {
		const { keysFile, policies, webhooks } = files();
		const args = [
			"--data-dir",
			join(root, "log"),
			"--keys-file",
			keysFile,
			"--approval-policies-file",
			policies,
			"--webhooks-file",
			webhooks,
		];
		for (const viaNpm of [false, true]) {
			const { out, err } = await launch(args, {}, viaNpm);
			const lines = out.split("\n").filter(Boolean);
			const records = lines.map((line) => JSON.parse(line));
			const listening = records.find((r) => r.msg === "pi-gateway listening");
			const url = listening.url as string;
			expect(listening).toMatchObject({
				docs: `${url}/docs`,
				console: `${url}/console`,
				keysFile: { path: keysFile, keys: 2 },
				approvalPoliciesFile: { path: policies, rules: 1 },
				webhooksFile: { path: webhooks, webhooks: 1 },
			});
			expect(err).toContain(`pi-gateway: API keys from ${keysFile} (2 keys)`);
			expect(err).toContain(`pi-gateway: approval policies from ${policies} (1 rule)`);
			expect(err).toContain(`pi-gateway: webhooks from ${webhooks} (1 webhook)`);
			expect(err).toContain(`pi-gateway: listening on ${url}; API reference ${url}/docs, console ${url}/console`);
		}
	});

	it("--log-format pretty prints pino-pretty's lines instead, and a terminal gets them by default", async () => {
		const pretty = await launch(
			["--data-dir", join(root, "pretty"), "--log-format", "pretty"],
			{},
			false,
			"pi-gateway listening",
		);
		expect(pretty.out).toMatch(/INFO.*pi-gateway listening/);
		expect(pretty.out).not.toContain('"msg":"pi-gateway listening"');
		// stdout a terminal (script(1) gives the CLI a pty): pretty unless told otherwise.
		// The gateway is killed by its pid: script(1) closing the pty would only send it SIGHUP (a keys reload).
		const pidFile = join(root, "tty.pid");
		const cli = `echo $$ > ${pidFile}; exec ${JSON.stringify(process.execPath)} src/main.ts --port 0 --data-dir ${join(root, "tty")}`;
		const tty = spawn("script", ["-qfec", cli, "/dev/null"], { cwd: repo, stdio: ["pipe", "pipe", "pipe"] });
		launched.push(tty);
		let seen = "";
		tty.stdout?.on("data", (c) => {
			seen += c;
		});
		await until(() => seen.includes("pi-gateway: listening on") && /INFO.*pi-gateway listening/.test(seen), 20_000);
		expect(seen).not.toContain('"msg":"pi-gateway listening"');
		process.kill(Number(readFileSync(pidFile, "utf8")), "SIGTERM");
		await new Promise((r) => tty.once("exit", r));
	});
});

// What docs/operations.md shows under Configuration → API keys: create, 200, revoke, 401, no flags.
describe("keys the default gateway reads", () => {
	it("`keys create` with only --data-dir works on the next request, `keys revoke` ends it on the next (no --keys-file, no restart)", async () => {
		// README's gateway: no --keys-file. Before, it read no keys at all and erin's key was a silent 401.
		const dataDir = gw.config.dataDir;
		const created = await main([
			"keys",
			"create",
			"--principal",
			"erin",
			"--scopes",
			"sessions:read",
			"--data-dir",
			dataDir,
		]);
		expect(created.stderr).toContain(`added to ${join(dataDir, "keys.json")}`);
		const secret = created.stdout.trim();
		const whoami = () => gw.fetch("/v1/whoami", { headers: { authorization: `Bearer ${secret}` } });
		const first = await whoami();
		expect(first.status).toBe(200);
		expect(((await first.json()) as { principal: string }).principal).toBe("erin");
		await main(["keys", "revoke", "erin", "--data-dir", dataDir]);
		expect((await whoami()).status).toBe(401);
	});
});

describe("the config file", () => {
	it("<data-dir>/config.yaml is read; flags and env override it; start-up says which file and where each value came from, secrets masked", async () => {
		const gwRoot = join(root, "configured");
		const data = join(gwRoot, "data");
		mkdirSync(data, { recursive: true });
		const fileToken = "file-token-0123456789abcdef";
		const file = join(data, "config.yaml");
		writeFileSync(
			file,
			[
				"# a comment, as operators write them",
				"max-sessions: 7",
				"max-queued: 9",
				"allowed-hosts: [gw.example]",
				`token: ${fileToken}`,
			].join("\n"),
			{ mode: 0o600 },
		);
		const envToken = "env-token-0123456789abcdef0";
		const launched = await launchGateway({ root: gwRoot, port: 0, token: envToken, extra: ["--max-sessions", "8"] });
		processes.push(launched);
		const info = await launched.api("/v1/info");
		expect(info.status).toBe(200);
		expect(info.body.limits).toMatchObject({ maxSessions: 8, maxQueued: 9 });
		// The env var's token wins over the file's.
		const withFileToken = await fetch(`${launched.url}/v1/info`, { headers: { authorization: `Bearer ${fileToken}` } });
		expect(withFileToken.status).toBe(401);
		const said = launched.stderr();
		expect(said).toContain(`pi-gateway: config file ${file} read`);
		expect(said).toContain("max-queued=9 (config file)");
		expect(said).toContain("max-sessions=8 (--max-sessions)");
		expect(said).toContain('allowed-hosts=["gw.example"] (config file)');
		expect(said).toContain("token=*** (PI_GATEWAY_TOKEN)");
		expect(said).not.toContain(fileToken);
		expect(said).not.toContain(envToken);
		launched.child.kill("SIGTERM");
		await launched.exited;
	});

	it("--print-config lists every setting with its value and source; --config names another file; a bad key or value says the fix", async () => {
		const file = join(root, "elsewhere.yaml");
		writeFileSync(file, "max-queued: 9\nsandbox: off\n");
		const { stdout } = await main(["--print-config", "--config", file, "--data-dir", join(root, "print")]);
		expect(stdout).toMatch(new RegExp(`^max-queued\\s+9\\s+# file ${file}$`, "m"));
		expect(stdout).toMatch(/^sandbox\s+off\s+# file /m);
		expect(stdout).toMatch(/^port\s+8787\s+# default$/m);
		expect(stdout).toMatch(new RegExp(`^data-dir\\s+${join(root, "print")}\\s+# --data-dir$`, "m"));
		expect(stdout.split("\n").filter((line) => / # /.test(line))).toHaveLength(Object.keys(ConfigSchema.shape).length);

		writeFileSync(file, "prot: 9\n");
		const typo = await main(["--config", file]).catch((e) => e);
		expect(typo.code).toBe(2);
		expect(typo.stderr).toContain(`config file ${file}: unknown setting "prot"; did you mean port?`);
		writeFileSync(file, "port: abc\n");
		const bad = await main(["--config", file]).catch((e) => e);
		expect(bad.stderr).toContain(`port: "abc" in ${file}: not a number`);
		expect(bad.stderr).toContain("a whole number from 0 to 65535, default 8787 (pi-gateway --help, section Server)");
		writeFileSync(file, "token: file-token-0123456789abcdef\n", { mode: 0o644 });
		const open = await main(["--config", file]).catch((e) => e);
		expect(open.stderr).toContain(`holds token but other users may read it: chmod 600 ${file}`);
		expect(open.stderr).not.toContain("file-token-0123456789abcdef");
		const missing = await main(["--config", join(root, "nope.yaml")]).catch((e) => e);
		expect(missing.stderr).toContain(`--config ${join(root, "nope.yaml")}: no such file`);
	});

	it("keys create writes where the file says the gateway reads (keys-file beside the file, PI_GATEWAY_CONFIG)", async () => {
		const etc = join(root, "etc");
		mkdirSync(etc, { recursive: true });
		const file = join(etc, "gw.yaml");
		writeFileSync(file, "keys-file: gw-keys.json\n");
		const created = await run(
			process.execPath,
			[gatewayEntry, "keys", "create", "--principal", "dana", "--scopes", "sessions:read"],
			{
				cwd: repo,
				env: { ...process.env, PI_GATEWAY_CONFIG: file },
			},
		);
		expect(created.stderr).toContain(`added to ${join(etc, "gw-keys.json")}`);
		const { stdout } = await main(["--print-config", "--config", file]);
		expect(stdout).toMatch(new RegExp(`^keys-file\\s+${join(etc, "gw-keys.json")}\\s+# file ${file}$`, "m"));
	});
});

describe("errors that say what to do", () => {
	const fails = async (args: string[]) => {
		const error = await main(args).catch((e) => e);
		expect(error.code, `${args.join(" ")} → ${error.stderr}`).toBe(2);
		return error.stderr as string;
	};

	it("an unknown flag names the closest one; a bad value names the flag, what it takes and the --help section", async () => {
		expect(await fails(["--prot", "1"])).toContain("unknown option --prot; did you mean --port?");
		expect(await fails(["--sandbox-writeable", "/x"])).toContain("did you mean --sandbox-writable?");
		const port = await fails(["--port", "abc"]);
		expect(port).toContain('--port "abc": not a number.');
		expect(port).toContain("a whole number from 0 to 65535, default 8787 (pi-gateway --help, section Server)");
		expect(port).not.toContain("NaN");
		expect(await fails(["--sandbox", "maybe"])).toContain(
			'--sandbox "maybe": not one of the choices. Run each pi in bubblewrap',
		);
		expect(await fails(["--demo=yes"])).toContain("--demo is a switch and takes no value: write --demo or --no-demo");
		expect(await fails(["--port"])).toContain("--port needs a value");
		expect(await fails(["serve"])).toContain('unexpected argument "serve"');
		const env = await run(process.execPath, [gatewayEntry], {
			cwd: repo,
			env: { ...process.env, PI_GATEWAY_MAX_SESSIONS: "lots" },
		}).catch((e) => e);
		expect(env.stderr).toContain('PI_GATEWAY_MAX_SESSIONS="lots": not a number.');
	});

	it("a port already in use: one line naming the port, the setting that chose it and the fix; exit 2", async () => {
		const taken = createServer();
		await new Promise<void>((r) => taken.listen(0, "127.0.0.1", r));
		const port = (taken.address() as AddressInfo).port;
		try {
			const dataDir = join(root, "port-in-use");
			const lastLine = (stderr: string) => stderr.trim().split("\n").at(-1);
			const byFlag = await fails(["--port", String(port), "--data-dir", dataDir, "--sandbox", "off"]);
			expect(lastLine(byFlag)).toBe(
				`pi-gateway: port ${port} on 127.0.0.1 (--port) is already in use, by another pi-gateway or another program: stop that one, or choose another with --port N, PI_GATEWAY_PORT=N or port: N in the config file (0 takes a free one)`,
			);
			const byEnv = await run(process.execPath, [gatewayEntry, "--data-dir", dataDir, "--sandbox", "off"], {
				cwd: repo,
				env: { ...process.env, PI_GATEWAY_PORT: String(port) },
			}).catch((e) => e);
			expect(byEnv.code).toBe(2);
			expect(lastLine(byEnv.stderr)).toContain(`port ${port} on 127.0.0.1 (PI_GATEWAY_PORT) is already in use`);
			// Nothing else about it: no stack, no bare errno line, no JSON log on stdout.
			expect(`${byFlag}${byEnv.stderr}`).not.toMatch(/EADDRINUSE|\n\s+at /);
			expect(byEnv.stdout).toBe("");
		} finally {
			taken.close();
		}
	});

	it("keys: what was wrong, then the usage; a bad principal in words, not zod's JSON", async () => {
		const usage = "Usage: pi-gateway keys create --principal NAME";
		const frob = await fails(["keys", "frob"]);
		expect(frob).toContain('unknown keys command "frob": the commands are create, list, revoke');
		expect(frob).toContain(usage);
		const noPrincipal = await fails(["keys", "create", "--scopes", "sessions:read", "--data-dir", join(root, "k")]);
		expect(noPrincipal).toContain("keys create needs --principal NAME");
		expect(noPrincipal).toContain(usage);
		const jwt = await fails([
			"keys",
			"create",
			"--principal",
			"jwt:x",
			"--scopes",
			"sessions:read",
			"--data-dir",
			join(root, "k"),
		]);
		expect(jwt).toContain('--principal "jwt:x": `jwt:` names identity provider subjects');
		expect(jwt).not.toMatch(/"code":|\[\s*\{/);
		expect(
			await fails(["keys", "create", "--principal", "bo", "--scopes", "sessions:rd", "--data-dir", join(root, "k")]),
		).toContain('"sessions:rd" is not a scope; the scopes are sessions:read');
		expect(await fails(["keys", "list", "--jsn"])).toContain("unknown option --jsn; did you mean --json?");
	});

	it("--help is in sections, with the demo model's real default; acp --help prints its usage", async () => {
		const { stdout } = await main(["--help"]);
		for (const title of ["Server", "Auth", "Model and pi", "Sessions", "Sandbox", "Workspace", "Cluster", "Webhooks"])
			expect(stdout).toMatch(new RegExp(`^${title} — `, "m"));
		expect(stdout).not.toMatch(/^Other/m);
		const at = stdout.indexOf("--[no-]demo");
		const demo = stdout.slice(at, stdout.indexOf("\n  --", at));
		expect(demo).toContain("default on unless --provider or --model is given");
		const acp = await main(["acp", "--help"]);
		expect(acp.stdout).toContain("Usage: pi-gateway acp --url GW");
		expect(acp.stderr).not.toContain("Unknown option");
		const typo = await main(["acp", "--url", "http://127.0.0.1:1", "--modle", "a/b"]).catch((e) => e);
		expect(typo.code).toBe(2);
		expect(typo.stderr).toContain("Unknown option '--modle' (pi-gateway acp --help lists the options)");
	});

	it("a checkout without dist/ (no build yet): the bin names the file and the command that makes it", async () => {
		// bin/pi-gateway.js alone beside its package.json, as in a clone before `npm run build`.
		const bare = mkdtempSync(join(tmpdir(), "pi-gateway-nodist-"));
		try {
			mkdirSync(join(bare, "bin"));
			writeFileSync(join(bare, "package.json"), JSON.stringify({ name: "pi-gateway", type: "module" }));
			writeFileSync(join(bare, "bin/pi-gateway.js"), readFileSync(join(repo, "bin/pi-gateway.js")));
			const error = await run(process.execPath, [join(bare, "bin/pi-gateway.js"), "--help"]).catch((e) => e);
			expect([error.code, error.stderr.trim()]).toEqual([
				2,
				"pi-gateway: dist/pi-gateway.mjs is missing; build it with `npm run build`",
			]);
		} finally {
			rmSync(bare, { recursive: true, force: true });
		}
	});

	const system = "/usr/bin/node";
	const old =
		existsSync(system) && Number(execFileSync(system, ["-p", "process.versions.node.split('.')[0]"]).toString()) < 22;
	it.skipIf(!old)(
		"on Node 20 the installed command says which Node it needs, in one line, before anything fails",
		async () => {
			const error = await run(system, ["bin/pi-gateway.js", "--help"], { cwd: repo }).catch((e) => e);
			expect(error.code).toBe(2);
			const lines = (error.stderr as string).trim().split("\n");
			expect(lines).toHaveLength(1);
			expect(lines[0]).toMatch(/^pi-gateway: needs Node\.js >= 22\.19 .* this is Node 20\./);
			expect(error.stderr).not.toContain("node:sqlite'");
		},
	);
});
