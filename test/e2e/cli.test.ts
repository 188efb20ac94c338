import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";

// The CLI as a user meets it: what --help promises, and the lines printed at start about the token.
const repo = resolve(import.meta.dirname, "../..");
const run = promisify(execFile);
const main = (args: string[]) => run(process.execPath, ["src/main.ts", ...args], { cwd: repo });

let gw: TestGateway;
let root: string;
const launched: ChildProcess[] = [];
beforeAll(async () => {
	gw = await startTestGateway();
	root = mkdtempSync(join(tmpdir(), "pi-gateway-cli-"));
});
afterAll(async () => {
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
	const [command, ...prefix] = viaNpm ? ["npm", "start", "--silent", "--"] : [process.execPath, "src/main.ts"];
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
			expect(Object.keys(listed[0]).sort()).toEqual(["createdAt", "id", "principal", "scopes"]);

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
