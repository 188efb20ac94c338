import {
	existsSync,
	lstatSync,
	mkdirSync,
	mkdtempSync,
	readlinkSync,
	realpathSync,
	rmSync,
	symlinkSync,
	writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/config.ts";
import { readableProblem } from "../../src/config/layout-check.ts";
import { sandboxArgs } from "../../src/sessions/process/sandbox.ts";

// bwrap applies mounts in order, each from the host's tree: hides must come before what is put
// back below them, however the folders nest.
const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-gateway-bwrap-args-")));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The system's part of the view (sandbox-view.ts), and the gateway's node shown for the tools. */
const system = (dest: string) =>
	/^\/(usr|etc|bin|sbin|lib\w*)(\/|$)/.test(dest) || dest === realpathSync(process.execPath);

/** The session's mount operations as [flag, path] pairs, in order (the system's part left out). */
function mounts(args: string[]): string[][] {
	const out: string[][] = [];
	for (let i = 0; i < args.length; i++) {
		const flag = args[i] as string;
		if (flag === "--symlink") i += 2;
		else if (flag === "--dir") i += 1;
		else if ((flag === "--ro-bind" || flag === "--bind") && system(args[i + 2] as string)) i += 2;
		else if (flag === "--tmpfs") out.push([flag, args[++i] as string]);
		// The session's folder comes by descriptor (3), never by a path bwrap would resolve again.
		else if (flag === "--bind-fd") out.push([`${flag} ${args[++i]}`, args[++i] as string]);
		else if (flag === "--bind" || flag === "--ro-bind") {
			const [src, dest] = [args[++i], args[++i]];
			out.push(src === "/" ? [flag, "/"] : src === "/dev/null" ? ["null", dest as string] : [flag, dest as string]);
		}
	}
	return out;
}

describe("sandboxArgs", () => {
	it("the session in the root, the data dir beside it: both hidden, the folder bound from its descriptor", () => {
		// A data dir inside the root is refused at start (layout-check.ts); beside it is the layout.
		const ws = join(root, "ws");
		const data = join(root, "data");
		mkdirSync(ws, { recursive: true });
		mkdirSync(join(data, "pi-sessions"), { recursive: true });
		writeFileSync(join(data, "token"), "t".repeat(20));
		const config = parseConfig({ workspaceRoot: ws, dataDir: data, tokenFile: join(data, "token") });
		const args = sandboxArgs(config, {
			cwd: ws,
			sessionDir: join(data, "pi-sessions"),
			readable: [],
			env: { PI_CODING_AGENT_DIR: join(root, "agent") },
		});
		// No privilege left to undo the mounts, as root too (issue 20: bwrap as root keeps every capability).
		expect(args.slice(0, 7)).toEqual([
			"--die-with-parent",
			"--unshare-pid",
			"--unshare-user",
			"--disable-userns",
			"--cap-drop",
			"ALL",
			"--new-session",
		]);
		expect(mounts(args)).toEqual([
			["--tmpfs", "/tmp"],
			["--tmpfs", data],
			["--bind-fd 3", ws],
			["--bind", join(root, "agent")],
			["--bind", join(data, "pi-sessions")],
		]);
		// The token lies in the hidden data dir: nothing to cover where nothing shows it.
		expect(args.slice(-5)).toEqual(["--remount-ro", "/", "--chdir", ws, "--"]);
	});

	// pi's extension loader keeps what it made of each extension in the temp folder: in the sandbox
	// that is empty at each start, so the area's own copy is shown there (areas.ts areaCaches).
	it("shows the area's copy of pi's transformed extensions at /tmp/jiti, below the sandbox's own /tmp", () => {
		const ws = join(root, "ws-jiti");
		const data = join(root, "data-jiti");
		const jiti = join(data, "compile-cache", "jiti", "admin");
		mkdirSync(ws, { recursive: true });
		mkdirSync(jiti, { recursive: true });
		const config = parseConfig({ workspaceRoot: ws, dataDir: data });
		const env = { PI_CODING_AGENT_DIR: join(root, "agent") };
		const args = sandboxArgs(config, { cwd: ws, jitiCache: jiti, readable: [], env });
		expect(mounts(args)).toEqual([
			["--tmpfs", "/tmp"],
			["--bind", "/tmp/jiti"],
			["--tmpfs", data],
			["--bind-fd 3", ws],
			["--bind", join(root, "agent")],
		]);
		const at = args.indexOf("/tmp/jiti");
		expect(args.slice(at - 2, at + 1)).toEqual(["--bind", jiti, "/tmp/jiti"]);
		// Without one (none is given unconfined) there is no copy to show.
		expect(sandboxArgs(config, { cwd: ws, readable: [], env })).not.toContain("/tmp/jiti");
	});

	it("a session in a sub-folder: the root is hidden, the sub-folder and the files pi runs put back", () => {
		const ws = join(root, "ws2");
		mkdirSync(join(ws, "a"), { recursive: true });
		mkdirSync(join(ws, "ext"), { recursive: true });
		writeFileSync(join(ws, "ext", "gate.ts"), "");
		const config = parseConfig({ workspaceRoot: ws, dataDir: join(root, "data2") });
		const args = sandboxArgs(config, {
			cwd: join(ws, "a"),
			readable: [join(ws, "ext", "gate.ts"), join(ws, "a", "inside-cwd.ts"), "/usr/bin/env"],
			env: { PI_CODING_AGENT_DIR: join(root, "agent") },
		});
		expect(mounts(args)).toEqual([
			["--tmpfs", "/tmp"],
			["--tmpfs", ws],
			["--bind", join(root, "agent")],
			["--bind-fd 3", join(ws, "a")],
			["--ro-bind", join(ws, "ext", "gate.ts")],
		]);
	});

	// An attacker's review: the operator's pi agent dir (the real models.json and auth.json) was no
	// protected path; where a folder the view shows holds it, it is covered like a secret file.
	it("covers the operator's pi agent dir with an empty tmpfs where a shown folder holds it", () => {
		const ws = join(root, "ws-op");
		const opHome = join(root, "op-home");
		const opAgent = join(opHome, ".pi", "agent");
		const inRoot = join(ws, ".pi", "agent");
		for (const dir of [ws, opAgent, inRoot]) mkdirSync(dir, { recursive: true });
		const env = { PI_CODING_AGENT_DIR: join(root, "agent") };
		// Under a --sandbox-writable folder: the cover comes after the bind that shows it.
		const writable = parseConfig({
			workspaceRoot: ws,
			dataDir: join(root, "data-op"),
			piAgentDir: opAgent,
			sandboxWritable: [opHome],
		});
		expect(mounts(sandboxArgs(writable, { cwd: ws, readable: [], env })).slice(-2)).toEqual([
			["--bind", opHome],
			["--tmpfs", opAgent],
		]);
		// The folder itself writable (same depth): still covered, after.
		const same = parseConfig({
			workspaceRoot: ws,
			dataDir: join(root, "data-op"),
			piAgentDir: opAgent,
			sandboxWritable: [opAgent],
		});
		expect(mounts(sandboxArgs(same, { cwd: ws, readable: [], env })).slice(-2)).toEqual([
			["--bind", opAgent],
			["--tmpfs", opAgent],
		]);
		// In the session's own folder (an operator's agent dir inside the workspace root).
		const inCwd = parseConfig({ workspaceRoot: ws, dataDir: join(root, "data-op"), piAgentDir: inRoot });
		expect(mounts(sandboxArgs(inCwd, { cwd: ws, readable: [], env })).at(-1)).toEqual(["--tmpfs", inRoot]);
		// Where nothing shows it, nothing is mounted for it.
		const apart = parseConfig({ workspaceRoot: ws, dataDir: join(root, "data-op"), piAgentDir: opAgent });
		expect(mounts(sandboxArgs(apart, { cwd: ws, readable: [], env })).flat()).not.toContain(opAgent);
	});

	it("shows an allowlist, not the host: the system's folders and /etc's harmless files, never its secrets", () => {
		const ws = join(root, "ws3");
		mkdirSync(ws, { recursive: true });
		const config = parseConfig({ workspaceRoot: ws, dataDir: join(root, "data3") });
		const args = sandboxArgs(config, { cwd: ws, readable: [], env: { HOME: "/root" } });
		const binds = args.flatMap((a, i) => (a === "--ro-bind" || a === "--bind" ? [args[i + 2] as string] : []));
		expect(binds).not.toContain("/");
		expect(binds).toContain("/usr");
		if (existsSync("/etc/passwd")) expect(binds).toContain("/etc/passwd");
		for (const secret of [
			"/etc/shadow",
			"/etc/gshadow",
			"/etc/ssh",
			"/etc/sudoers",
			"/etc/ssl/private",
			"/var",
			"/home",
			"/srv",
			"/opt",
		])
			expect(binds.filter((b) => b === secret || b.startsWith(`${secret}/`))).toEqual([]);
		// A link stays a link (merged /usr: /bin -> usr/bin).
		if (lstatSync("/bin").isSymbolicLink()) expect(args.join(" ")).toContain(`--symlink ${readlinkSync("/bin")} /bin`);
		// HOME: an empty tmpfs where the gateway's was, sized like /tmp.
		expect(args.join(" ")).toContain(`--size ${config.sandboxTmpBytes} --tmpfs /root`);
	});
});

describe("readableProblem: what an operator or a session may add read-only", () => {
	const ws = join(root, "rp-ws");
	const data = join(root, "rp-data");
	const secret = join(root, "rp-secrets", "token");
	const writable = join(root, "rp-writable");
	const agentDir = join(root, "rp-home", ".pi", "agent");
	const guard = () => ({ dataDir: data, workspaceRoot: ws, secrets: [secret], agentDir, writable: [writable] });
	const alice = () => ({ path: join(ws, "@alice"), admin: false });
	const admin = () => ({ path: ws, admin: true });
	it("refuses the data dir, a secret, the root, what agents write and a principal's paths; allows an admin's host folders", () => {
		for (const dir of [join(ws, "@alice", "refs"), join(ws, "@bob"), join(data, "x"), join(root, "shared"), writable])
			mkdirSync(dir, { recursive: true });
		mkdirSync(join(root, "rp-secrets"), { recursive: true });
		writeFileSync(secret, "t");
		const problem = (path: string, area?: { path: string; admin: boolean }) =>
			readableProblem(path, { ...guard(), area })?.detail;
		expect(problem("relative/path")).toMatch(/not an absolute path/);
		expect(readableProblem(join(root, "missing"), guard())?.missing).toBe(true);
		expect(problem("/")).toMatch(/data dir/);
		expect(problem(data)).toMatch(/data dir/);
		expect(problem(join(data, "x"))).toMatch(/data dir/);
		expect(problem(join(root, "rp-secrets"))).toMatch(/reads a secret/);
		expect(problem(secret)).toMatch(/reads a secret/);
		expect(problem(ws)).toMatch(/workspace root/);
		// The operator's setting: a host folder, never one in the workspace root.
		expect(problem(join(root, "shared"))).toBeUndefined();
		expect(problem(join(ws, "@alice", "refs"))).toMatch(/lies in the workspace root/);
		// Nothing an agent writes, whoever asks: a folder swapped for a relative link to / between the
		// check and bwrap's mount showed the host's /tmp and the data dir (an attacker's review).
		expect(problem(join(ws, "@alice", "refs"), alice())).toMatch(/where agents write/);
		expect(problem(join(ws, "@bob"), admin())).toMatch(/where agents write/);
		expect(problem(writable, admin())).toMatch(/--sandbox-writable/);
		expect(problem(writable)).toMatch(/--sandbox-writable/);
		// A principal other than an admin adds nothing; an admin any other host folder.
		expect(problem(join(root, "shared"), alice())).toMatch(/only an admin/);
		expect(problem("/usr", alice())).toMatch(/only an admin/);
		expect(problem(join(root, "shared"), admin())).toBeUndefined();
		expect(problem(ws, admin())).toMatch(/workspace root/);
		// The operator's pi agent dir (its models.json and auth.json), what holds it and what lies in it:
		// an admin's `sandboxReadable: ["$HOME/.pi"]` read them (an attacker's review).
		mkdirSync(agentDir, { recursive: true });
		writeFileSync(join(agentDir, "models.json"), "{}");
		for (const path of [join(root, "rp-home"), join(root, "rp-home", ".pi"), agentDir, join(agentDir, "models.json")])
			expect(problem(path, admin())).toMatch(/operator's pi agent dir/);
		expect(problem(join(root, "rp-home", ".pi"))).toMatch(/operator's pi agent dir/);
		// A link is judged by what it leads to.
		symlinkSync(data, join(root, "shared", "link"));
		expect(problem(join(root, "shared", "link"), admin())).toMatch(/data dir/);
	});
});
