import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import { join, sep } from "node:path";
import type { Config } from "../config.ts";
import { isInside } from "./spawn.ts";

/**
 * bubblewrap around each pi child: its own PID namespace (the gateway's /proc entries are out of
 * sight, and every tool process dies with the namespace), the system read-only, the gateway's data
 * directory, token file and workspace root hidden under empty tmpfs, and only what this session
 * needs put back: its cwd, pi's session folder and agent dir (writable), the files it runs (read-only).
 * The network is shared: pi must reach its model provider.
 */

export interface SandboxStatus {
	enabled: boolean;
	/** Why it is off (for the startup line), when it is. */
	reason?: string;
}

const bwrap = "bwrap";

/** Every child's base: its own PID namespace and session, the system read-only, fresh /dev and /proc. */
const baseArgs = [
	"--die-with-parent",
	"--unshare-pid",
	"--new-session",
	"--ro-bind",
	"/",
	"/",
	"--dev",
	"/dev",
	"--proc",
	"/proc",
];

/** Runs a tiny sandbox with the features the children need; the error says why when it cannot. */
export function probeSandbox(): SandboxStatus {
	if (process.platform !== "linux")
		return { enabled: false, reason: `bubblewrap needs Linux (this is ${process.platform})` };
	const probe = spawnSync(bwrap, [...baseArgs, "--tmpfs", "/tmp", "--", "true"], { encoding: "utf8", timeout: 10_000 });
	if (probe.error) {
		const code = (probe.error as NodeJS.ErrnoException).code;
		return {
			enabled: false,
			reason: code === "ENOENT" ? "bwrap not found (apt-get install bubblewrap)" : `bwrap failed: ${code}`,
		};
	}
	if (probe.status !== 0) return { enabled: false, reason: `bwrap cannot sandbox here: ${probe.stderr.trim()}` };
	return { enabled: true };
}

/** Decides at start: `on` without a working bwrap refuses to start, `auto` falls back with a reason. */
export function resolveSandbox(config: Config): SandboxStatus {
	if (config.sandbox === "off") return { enabled: false, reason: "--sandbox off" };
	const status = probeSandbox();
	if (!status.enabled && config.sandbox === "on") throw new Error(`--sandbox on, but ${status.reason}`);
	return status;
}

/** pi's config folder as the child will see it (PI_CODING_AGENT_DIR, else ~/.pi/agent). */
export function agentDir(env: Record<string, string>): string {
	return env.PI_CODING_AGENT_DIR ?? join(env.HOME ?? homedir(), ".pi", "agent");
}

export interface SandboxPaths {
	cwd: string;
	/** pi's session folder, when the session keeps a file. */
	sessionDir?: string;
	/** Files and folders the child runs or loads (pi itself, extensions), shown read-only. */
	readable: string[];
	env: Record<string, string>;
}

type Mount = { path: string; kind: "hide" | "rw" | "ro" | "null" };

const depth = (path: string) => path.split(sep).filter(Boolean).length;

/**
 * bwrap's argv for one child. Mounts apply in order and bwrap takes every source from the host's
 * tree, so they are sorted shallow-first (a hide on a parent, then what is put back below it);
 * that keeps it right however the roots nest (a data dir inside the workspace, a cwd equal to it).
 */
export function sandboxArgs(config: Config, paths: SandboxPaths): string[] {
	const hidden = ["/tmp", config.workspaceRoot, config.dataDir]
		.filter((p) => existsSync(p))
		.map((p) => realpathSync(p));
	const mounts: Mount[] = [];
	for (const path of hidden) if (path !== paths.cwd) mounts.push({ path, kind: "hide" });
	const agent = agentDir(paths.env);
	mkdirSync(agent, { recursive: true });
	const writable = [paths.cwd, agent, ...(paths.sessionDir ? [paths.sessionDir] : []), ...config.sandboxWritable];
	for (const path of writable) if (existsSync(path)) mounts.push({ path, kind: "rw" });
	for (const path of paths.readable) {
		// Only what a hide would take away, and never over something already writable.
		if (!existsSync(path) || writable.some((w) => isInside(w, path))) continue;
		if (hidden.some((h) => isInside(h, path))) mounts.push({ path, kind: "ro" });
	}
	// The token file is covered by an empty one wherever it lies (a writable folder above it included).
	// The keys file too (only hashes, but who holds which scopes is not the agent's business).
	for (const file of [config.tokenFile, config.keysFile])
		if (file && existsSync(file)) mounts.push({ path: realpathSync(file), kind: "null" });
	const order = { hide: 0, rw: 1, ro: 1, null: 2 };
	mounts.sort((a, b) => depth(a.path) - depth(b.path) || order[a.kind] - order[b.kind]);
	const args = [...baseArgs];
	for (const { path, kind } of mounts) {
		if (kind === "hide") args.push("--tmpfs", path);
		else if (kind === "rw") args.push("--bind", path, path);
		else if (kind === "ro") args.push("--ro-bind", path, path);
		else args.push("--ro-bind", "/dev/null", path);
	}
	args.push("--chdir", paths.cwd, "--");
	return args;
}

export function wrapCommand(
	config: Config,
	paths: SandboxPaths,
	command: string,
	args: string[],
): { command: string; args: string[] } {
	return { command: bwrap, args: [...sandboxArgs(config, paths), command, ...args] };
}
