import {
	chmodSync,
	existsSync,
	mkdirSync,
	mkdtempSync,
	readFileSync,
	rmSync,
	symlinkSync,
	writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { probeSandbox } from "../../src/sessions/process/sandbox.ts";
import { type Confinement, spawnConfined } from "../../src/workspace/confined.ts";
import { git } from "../../src/workspace/git.ts";
import { searchWorkspace } from "../../src/workspace/search.ts";

// git and ripgrep run on the agent's bytes inside bubblewrap (issue 29): the folder read-only,
// the gateway's data dir hidden, no network, no environment but the tool's own.
const holds = probeSandbox().enabled;
let base: string;
let dataDir: string;
let work: string;
let fakeBin: string;
let savedPath: string | undefined;
let confinement: Confinement;
const secret = "s3cr3t-token-value";

beforeAll(() => {
	base = mkdtempSync(join(tmpdir(), "pi-gw-confined-"));
	dataDir = join(base, "data");
	work = join(base, "work");
	mkdirSync(join(dataDir, "snapshots", "s1", "git"), { recursive: true });
	mkdirSync(work);
	writeFileSync(join(dataDir, "token"), secret);
	writeFileSync(join(work, "a.txt"), "zz\n");
	// A stand-in for rg (found on PATH first): it reports, as one match line, what it could do.
	fakeBin = join(base, "bin");
	mkdirSync(fakeBin);
	const probe = [
		"#!/bin/sh",
		'case " $* " in *" --files "*) echo ./a.txt; exit 0;; esac',
		`read_=$(cat ${join(dataDir, "token")} 2>/dev/null || echo none)`,
		"write_=$( (echo x > planted.txt) 2>/dev/null && echo ok || echo refused)",
		"net_=$(cat /proc/net/dev 2>/dev/null | grep -c : )",
		'[ -n "$LEAKED" ] && leak_=$LEAKED || leak_=none',
		'printf \'{"type":"match","data":{"path":{"text":"./a.txt"},"lines":{"text":"read=%s write=%s leak=%s net=%s"},"line_number":1}}\\n\' "$read_" "$write_" "$leak_" "$net_"',
	].join("\n");
	writeFileSync(join(fakeBin, "rg"), `${probe}\n`);
	chmodSync(join(fakeBin, "rg"), 0o755);
	savedPath = process.env.PATH;
	process.env.PATH = `${fakeBin}:${process.env.PATH}`;
	process.env.LEAKED = "from-the-gateway";
	confinement = { sandbox: true, hide: [dataDir], cover: [] };
});
afterAll(() => {
	delete process.env.LEAKED;
	// The test files after this one share its worker (vitest.config.ts: isolate false).
	process.env.PATH = savedPath;
	rmSync(base, { recursive: true, force: true });
});

const run = async (confine: Confinement | undefined, script: string, writable: string[] = []) => {
	const child = spawnConfined(confine, {
		command: "sh",
		args: ["-c", script],
		folder: work,
		writable,
		env: { PATH: "/usr/bin:/bin" },
	});
	let out = "";
	child.stdout.on("data", (chunk: Buffer) => {
		out += chunk;
	});
	const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
	return { out, code };
};

describe.skipIf(!holds)("a host tool in bubblewrap", () => {
	it("cannot read the hidden data dir, cannot write the folder, has no network and only the env it is given", async () => {
		const script = `cat ${join(dataDir, "token")}; echo x > ${join(work, "planted.txt")}; echo "env=$(env | grep -c .)"; cat /proc/net/dev | grep -c :; pwd; ls -l /proc/self/fd; grep 'Max address space' /proc/self/limits`;
		const { out } = await run(confinement, script);
		expect(out).not.toContain(secret);
		expect(existsSync(join(work, "planted.txt"))).toBe(false);
		// PATH, PWD and the shell's own: nothing of the gateway's environment.
		expect(Number(/env=(\d+)/.exec(out)?.[1])).toBeLessThanOrEqual(4);
		expect(out).toContain(`\n1\n${work}\n`);
		// Bounded in memory: 2 GiB of address space, soft and hard.
		expect(out).toMatch(/Max address space\s+2147483648\s+2147483648\s+bytes/);
		// The folder's descriptor was not left open in the tool.
		expect(out).not.toContain(`-> ${work}\n`);
		// Unconfined, the same script does read and write: the test sees the difference.
		const open = await run({ sandbox: false, hide: [], cover: [] }, script);
		expect(open.out).toContain(secret);
		rmSync(join(work, "planted.txt"));
	});

	it("writes only where it is told (the shadow git dir), and cannot write the folder even so", async () => {
		const gitDir = join(dataDir, "snapshots", "s1", "git");
		const { out } = await run(
			confinement,
			`echo obj > ${gitDir}/written && echo wrote; ls ${dataDir}; cat ${join(dataDir, "token")}`,
			[gitDir],
		);
		expect(out).toContain("wrote");
		expect(readFileSync(join(gitDir, "written"), "utf8")).toBe("obj\n");
		// The rest of the data dir stays hidden: only the path to the git dir is there.
		expect(out).toContain("snapshots");
		expect(out).not.toContain("token");
		expect(out).not.toContain(secret);
	});

	it("refuses a folder that is not the real path it was given (a link on the way)", async () => {
		const link = join(base, "link");
		symlinkSync(work, link);
		expect(() => spawnConfined(confinement, { command: "true", args: [], folder: link, env: {} })).toThrow(/folder/);
	});

	it("git: the shadow repository's git runs confined (reads outside the folder fail, writes into it fail)", async () => {
		const repo = { gitDir: join(dataDir, "snapshots", "s1", "git"), workTree: work, confine: confinement };
		await git(repo, ["init", "--quiet"], { timeoutMs: 10_000 });
		// The gateway's own argument names a file of the hidden data dir: confined git cannot see it.
		await expect(git(repo, ["hash-object", "--", join(dataDir, "token")], { timeoutMs: 10_000 })).rejects.toThrow(
			/failed/,
		);
		const open = { ...repo, confine: { sandbox: false, hide: [], cover: [] } };
		expect((await git(open, ["hash-object", "--", join(dataDir, "token")], { timeoutMs: 10_000 })).out.length).toBe(41);
		const { out } = await git(repo, ["hash-object", "-w", "--", "a.txt"], { timeoutMs: 10_000 });
		expect(out.toString().trim()).toMatch(/^[0-9a-f]{40}$/);
		await git(repo, ["add", "--all", "--", "."], { timeoutMs: 10_000 });
		const tree = (await git(repo, ["write-tree"], { timeoutMs: 10_000 })).out.toString().trim();
		await expect(
			git(repo, ["archive", `--output=${join(work, "out.tar")}`, tree], { timeoutMs: 10_000 }),
		).rejects.toThrow(/failed/);
		expect(existsSync(join(work, "out.tar"))).toBe(false);
	});

	it("starts the tool in the caller's tick: a quick tool's exit is never missed", async () => {
		// An await between the spawn and the caller's listeners once let the event loop deliver a
		// fast git's exit to nobody: that git then waited for its deadline (about 1 in 150 here).
		const child = spawnConfined(confinement, { command: "true", args: [], folder: work, env: {} });
		expect(child).not.toBeInstanceOf(Promise);
		expect(await new Promise((resolve) => child.on("close", resolve))).toBe(0);
		const repo = { gitDir: join(dataDir, "snapshots", "s1", "git"), workTree: work, confine: confinement };
		await git(repo, ["init", "--quiet"], { timeoutMs: 10_000 });
		for (let i = 0; i < 60; i++) await git(repo, ["write-tree"], { timeoutMs: 5_000 });
	});

	it("ripgrep: the search's rg runs confined, with only the environment the gateway gives it", async () => {
		const result = await searchWorkspace(work, {
			q: "zz",
			maxResults: 10,
			timeoutMs: 10_000,
			ripgrep: "auto",
			confine: confinement,
		});
		const line = result.matches.find((m) => m.line === 1)?.text;
		expect(line).toBe("read=none write=refused leak=none net=1");
		expect(existsSync(join(work, "planted.txt"))).toBe(false);
		// The same stand-in unconfined reads the secret: what the test measures is the sandbox.
		const open = await searchWorkspace(work, {
			q: "zz",
			maxResults: 10,
			timeoutMs: 10_000,
			ripgrep: "auto",
			confine: { sandbox: false, hide: [], cover: [] },
		});
		expect(open.matches.find((m) => m.line === 1)?.text).toContain(`read=${secret} write=ok`);
		rmSync(join(work, "planted.txt"), { force: true });
	});
});
