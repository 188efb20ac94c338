import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
	for (const child of launched) child.kill("SIGKILL");
	await gw?.stop();
	rmSync(root, { recursive: true, force: true });
});

/** Starts the CLI on a free port and returns what it printed on stderr once it listens. */
async function start(args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
	const child = spawn(process.execPath, ["src/main.ts", "--port", "0", ...args], {
		cwd: repo,
		env: { ...process.env, ...env },
		stdio: ["ignore", "pipe", "pipe"],
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
	await until(() => out.includes('"pi-gateway listening"') && err.length > 0, 20_000);
	child.kill("SIGTERM");
	await new Promise((r) => child.once("exit", r));
	return err;
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
		const err = await start(["--data-dir", dataDir, "--workspace-root", root]);
		const file = join(dataDir, "token");
		expect(err).toContain(`pi-gateway: bearer token in ${file} (generated now, kept for the next start)`);
		expect(err).toContain(`curl -H "Authorization: Bearer $(cat ${file})"`);
		const token = readFileSync(file, "utf8").trim();
		expect(err).not.toContain(token);
		// The next start reuses it.
		expect(await start(["--data-dir", dataDir, "--workspace-root", root])).not.toContain("generated now");
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
	it("says where sessions without cwd work: <data-dir>/workspaces/<session id>, or the root given", async () => {
		const dataDir = join(root, "folders");
		const own = await start(["--data-dir", dataDir]);
		expect(own).toContain(
			`pi-gateway: sessions without cwd work in a folder of their own, ${join(dataDir, "workspaces")}/<session id>`,
		);
		const shared = await start(["--data-dir", dataDir, "--workspace-root", root]);
		expect(shared).toContain(
			`pi-gateway: sessions without cwd work in the workspace root ${root}, all in the same folder`,
		);
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
