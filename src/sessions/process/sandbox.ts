import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import { join, sep } from "node:path";
import type { Config } from "../../config/config.ts";
import { piStderrFd, piStdinFd, piStdoutFd } from "../../pi/child.ts";
import { GatewayError } from "../../shared/errors.ts";
import { operatorAgentDir } from "../relay/index.ts";
import { gatewayNode, sandboxHome, secretFiles, shownBySystem, systemView, viewEnd } from "./sandbox-view.ts";

export { secretFiles };

import { isInside } from "../../shared/paths.ts";

/**
 * bubblewrap around each pi child: its own PID namespace (the gateway's /proc entries are out of
 * sight, and every tool process dies with the namespace), only the system's allowlist shown
 * (sandbox-view.ts), the gateway's data directory, token file and workspace root hidden under empty
 * tmpfs, and only what this session needs put back: its cwd, pi's session folder and agent dir
 * (writable), the files it runs and the operator's extras (read-only), an empty HOME and /tmp.
 * No network but a loopback of its own: model calls go through the gateway's relay (relay/).
 * Nothing inside holds a capability (see baseArgs), as root either.
 */

/**
 * `sandboxed`: every pi and every tool of the gateway runs in bubblewrap. `unconfined`: the operator
 * said `--sandbox off`. `unavailable`: it was asked for (`auto`, the default) but bubblewrap is missing
 * or does not hold here; then nothing that would run unconfined starts (fail closed): creates and
 * resumes answer 503 sandbox_unavailable with the fix, /readyz is 503, the console says so.
 */
export type SandboxState = "sandboxed" | "unconfined" | "unavailable";

export interface SandboxStatus {
	enabled: boolean;
	state: SandboxState;
	/** Why it is off (for the startup line), when it is. */
	reason?: string;
}

/** What an operator does about an unavailable sandbox, in one sentence (start-up, 503s, /readyz, the console). */
export const sandboxFix =
	"install bubblewrap (`apt-get install bubblewrap`, or your system's package) and restart the gateway, or start it with --sandbox off to let pi's tools run unconfined as the gateway's user";

/** The 503 every create, resume and confined tool answers while the sandbox is unavailable. */
export function sandboxUnavailable(reason: string | undefined): GatewayError {
	return new GatewayError(
		503,
		"sandbox_unavailable",
		`No agent runs unconfined: the sandbox is unavailable (${reason ?? "bubblewrap does not hold here"}); ${sandboxFix}`,
		{ fix: sandboxFix },
	);
}

const bwrap = "bwrap";

/**
 * Every child's base: its own PID namespace and session, the system read-only, fresh /dev and /proc,
 * and no privilege to undo any of it. As root, bwrap keeps every capability unless told otherwise,
 * and a tool with CAP_SYS_ADMIN can `umount -l` the hides below (or `unshare -m` first, `mount
 * --bind /` elsewhere, `umount /proc` and nsenter the host), so three layers, each enough for the
 * escapes measured (test/e2e/sandbox-escape.test.ts):
 * - `--cap-drop ALL`: no capability, effective or bounding, so every mount, umount, unshare,
 *   setns and remount fails with EPERM; bwrap's no_new_privs keeps execve (setuid files, uid 0's
 *   exec rule) from giving any back.
 * - `--unshare-user`: even a capability would be one of the sandbox's own user namespace, never
 *   the host's, and every mount copied from the host is locked (cannot be lifted one by one).
 * - `--disable-userns`: no nested user namespace, where a tool would hold every capability again
 *   over a fresh copy of the mounts (those copies are locked too; this closes the door anyway).
 * A seccomp filter on the mount family would be a fourth: it needs a compiled BPF program per
 * architecture, and the three above already make each of those calls fail.
 */
/** No privilege to undo anything, as root too (see above); confined.ts starts its tools the same way. */
export const holdingArgs = [
	"--die-with-parent",
	"--unshare-pid",
	"--unshare-user",
	"--disable-userns",
	"--cap-drop",
	"ALL",
	"--new-session",
];
/** The system's allowlist read-only, fresh /dev and /proc (sandbox-view.ts), read from the host at each start. */
const baseArgs = () => [...holdingArgs, ...systemView()];

/**
 * Inside a probe sandbox, what a tool would try first: its capabilities, then lifting the hide
 * over /tmp with umount, in place and from new namespaces. It prints `CapEff=<hex>`, and `lifted`
 * for each umount that worked. Only sh builtins are needed for the first; umount or unshare
 * missing from the host count as failed attempts.
 */
const probeScript = `
while read -r k v; do [ "$k" = CapEff: ] && echo "CapEff=$v"; done < /proc/self/status
umount -l /tmp 2>/dev/null && echo lifted
unshare -m sh -c 'umount -l /tmp && echo lifted' 2>/dev/null
unshare -Urm sh -c 'umount -l /tmp && echo lifted' 2>/dev/null
exit 0`;

/** Runs a probe sandbox with the children's own base: it must run, and it must hold. */
export function probeSandbox(): SandboxStatus {
	const off = (reason: string): SandboxStatus => ({ enabled: false, state: "unavailable", reason });
	if (process.platform !== "linux") return off(`bubblewrap needs Linux (this is ${process.platform})`);
	// /bin/sh by its path: the sandbox shows the system's folders, not every folder on the caller's PATH.
	const args = [...baseArgs(), "--tmpfs", "/tmp", ...viewEnd, "--", "/bin/sh", "-c", probeScript];
	const probe = spawnSync(bwrap, args, { encoding: "utf8", timeout: 10_000 });
	if (probe.error) {
		const code = (probe.error as NodeJS.ErrnoException).code;
		return off(code === "ENOENT" ? "bwrap is not installed: not found on PATH" : `bwrap failed: ${code}`);
	}
	if (probe.status !== 0) return off(`bwrap cannot sandbox here: ${probe.stderr.trim()}`);
	// Both checks, both named: each is a reason of its own (and the tests see each one work).
	const capEff = /CapEff=(\w+)/.exec(probe.stdout)?.[1];
	const problems: string[] = [];
	if (capEff === undefined || !/^0+$/.test(capEff)) problems.push(`capabilities kept inside (CapEff ${capEff})`);
	if (probe.stdout.includes("lifted")) problems.push("a process inside lifted a hide with umount");
	if (problems.length) return off(`bwrap runs but does not hold: ${problems.join("; ")}`);
	return { enabled: true, state: "sandboxed" };
}

/** The last start's probe (the machine does not change under a running gateway). */
let probed: SandboxStatus | undefined;

/**
 * Decides: `off` is the operator's choice; `on` without a sandbox that holds refuses to start;
 * `auto` without one starts but runs no agent (state `unavailable`, fail closed). `fresh` (a start)
 * probes again; otherwise the last start's answer is used (a gateway made without a start probes once).
 */
export function resolveSandbox(config: Pick<Config, "sandbox">, fresh = false): SandboxStatus {
	if (config.sandbox === "off") return { enabled: false, state: "unconfined", reason: "--sandbox off" };
	// "on" after a start is what that start's probe found (another start's probe is not this gateway's).
	if (config.sandbox === "on" && !fresh) return { enabled: true, state: "sandboxed" };
	if (fresh || !probed) probed = probeSandbox();
	const status = probed;
	if (!status.enabled && config.sandbox === "on") throw new Error(`--sandbox on, but ${status.reason}; ${sandboxFix}`);
	return status;
}

/**
 * Whether a child is wrapped: true with a sandbox that holds, false only with `--sandbox off`;
 * throws 503 sandbox_unavailable otherwise, so nothing starts unconfined that was not meant to.
 */
export function confinedByConfig(config: Pick<Config, "sandbox">): boolean {
	const status = resolveSandbox(config);
	if (status.state === "unavailable") throw sandboxUnavailable(status.reason);
	return status.enabled;
}

/** pi's config folder as the child will see it (PI_CODING_AGENT_DIR, else ~/.pi/agent). */
export function agentDir(env: Record<string, string>): string {
	return env.PI_CODING_AGENT_DIR ?? join(env.HOME ?? homedir(), ".pi", "agent");
}

export interface SandboxPaths {
	cwd: string;
	/** pi's session folder, when the session keeps a file. */
	sessionDir?: string;
	/** Node's compile cache for pi (areas.ts areaCaches), writable. */
	compileCache?: string;
	/**
	 * pi's extension loader (jiti) keeps the JavaScript it made of each extension in the temp folder,
	 * which in the sandbox is empty at each start: without a kept copy every sandboxed pi loaded Babel
	 * and transformed its extensions again (≈ 0.37 s of CPU and 0.28 s of each start here). The
	 * area's (areas.ts areaCaches) is shown at /tmp/jiti, writable; jiti checks each file against
	 * its extension's source hash, so an edited extension is transformed again.
	 */
	jitiCache?: string;
	/** Files and folders the child runs or loads (pi itself, extensions), shown read-only. */
	readable: string[];
	/** The session's own read-only extras (its create body's sandboxReadable), checked already. */
	extraReadable?: string[];
	env: Record<string, string>;
	/** Unix sockets shown at their own path (the relay's, relay/). */
	sockets?: string[];
}

/** A hide over the data dir or the workspace root holds only the folders bwrap makes for what it puts back. */
const hideBytes = 1024 * 1024;

/** `from`: a bind's source on the host when it is not `path` itself. */
type Mount = { path: string; kind: "hide" | "home" | "rw" | "ro" | "null" | "cwd" | "cover"; from?: string };

/**
 * The descriptor the child is given its folder on (stdio slot 3): bwrap binds the folder the
 * gateway opened and checked (areas.ts openCheckedFolder), never a path resolved again later.
 */
export const cwdFd = 3;

/**
 * The descriptors pi's stdin, stdout and stderr reach bwrap on, moved to 0–2 as pi starts (pid 2
 * of the namespace: `sh -c exec` becomes pi). bwrap's init, pid 1, keeps its own 0–2 for life and
 * is dumpable: with pi's pipes there, a tool took pi's stdout from it with pidfd_getfd (an
 * attacker's review) though pi itself is out of reach (sealed-node.ts), and later pi's stderr, whose
 * text the gateway puts in a crashed session's 502. It closes every other descriptor, so only pi
 * holds these. bwrap's own stderr carries its errors until pi starts; the wrapper marks that moment
 * with a NUL byte (pi/child.ts keeps nothing written there after it: a tool holding init's copy).
 */
const movePipes = `printf '\\0' >&2; exec "$0" "$@" 0<&${piStdinFd} 1>&${piStdoutFd} 2>&${piStderrFd} ${piStdinFd}<&- ${piStdoutFd}>&- ${piStderrFd}>&-`;

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
	const writable = [
		paths.cwd,
		agent,
		...(paths.sessionDir ? [paths.sessionDir] : []),
		...(paths.compileCache ? [paths.compileCache] : []),
		...config.sandboxWritable,
	];
	mounts.push({ path: paths.cwd, kind: "cwd" });
	for (const path of writable.slice(1)) if (existsSync(path)) mounts.push({ path, kind: "rw" });
	// Only over the sandbox's own /tmp: a cwd at the host's /tmp shows that one, and nothing is bound into it.
	if (paths.jitiCache && hidden.includes("/tmp") && paths.cwd !== "/tmp")
		mounts.push({ path: "/tmp/jiti", kind: "rw", from: paths.jitiCache });
	// An empty, writable HOME where the gateway's was: tools keep their dotfiles there, for this run.
	const home = sandboxHome(paths.env.HOME);
	if (home !== "/tmp" && !writable.some((w) => isInside(w, home))) mounts.push({ path: home, kind: "home" });
	// Read-only: what pi runs and loads, the gateway's node for the tools, the operator's extras
	// (--sandbox-readable, checked at start) and the session's (checked at each start).
	const node = gatewayNode();
	const readable = [
		...paths.readable,
		...(node ? [node.show] : []),
		...config.sandboxReadable,
		...(paths.extraReadable ?? []),
	];
	for (const path of readable) {
		if (!existsSync(path)) continue;
		const real = realpathSync(path);
		if (shownBySystem(real) || writable.some((w) => isInside(w, real))) continue;
		mounts.push({ path, kind: "ro" });
	}
	// Every file the gateway reads a secret from is covered by an empty one wherever the view shows
	// it (a writable folder above it included): secretFiles.
	const shown = (real: string) =>
		shownBySystem(real) || mounts.some((m) => m.kind !== "hide" && m.kind !== "home" && isInside(m.path, real));
	for (const file of secretFiles(config))
		if (shown(realpathSync(file))) mounts.push({ path: realpathSync(file), kind: "null" });
	// So is the operator's pi agent dir (its models.json and auth.json hold the keys the relay adds):
	// an empty tmpfs over it, after whatever shows it (a --sandbox-writable folder, the workspace
	// root, the system's part), before what is put back below it (a data dir it holds).
	const operatorAgent = existsSync(operatorAgentDir(config)) ? realpathSync(operatorAgentDir(config)) : undefined;
	if (operatorAgent && shown(operatorAgent)) mounts.push({ path: operatorAgent, kind: "cover" });
	const order = { hide: 0, home: 0, cwd: 1, rw: 1, ro: 1, null: 2, cover: 2 };
	mounts.sort((a, b) => depth(a.path) - depth(b.path) || order[a.kind] - order[b.kind]);
	const args = baseArgs();
	for (const { path, kind, from } of mounts) {
		// Every tmpfs is memory: sized, or an agent writing into one fills the host's RAM.
		if (kind === "hide" || kind === "home" || kind === "cover")
			args.push(
				"--size",
				String(path === "/tmp" || kind === "home" ? config.sandboxTmpBytes : hideBytes),
				"--tmpfs",
				path,
			);
		else if (kind === "cwd") args.push("--bind-fd", String(cwdFd), path);
		else if (kind === "rw") args.push("--bind", from ?? path, path);
		else if (kind === "ro") args.push("--ro-bind", path, path);
		else args.push("--ro-bind", "/dev/null", path);
	}
	for (const socket of paths.sockets ?? []) args.push("--ro-bind", socket, socket);
	args.push(...viewEnd, "--chdir", paths.cwd, "--");
	return args;
}

export function wrapCommand(
	config: Config,
	paths: SandboxPaths,
	command: string,
	args: string[],
): { command: string; args: string[] } {
	// No network but a loopback of its own: model calls go through the relay's socket (relay/).
	const sandbox = ["--unshare-net", ...sandboxArgs(config, paths)];
	return { command: bwrap, args: [...sandbox, "/bin/sh", "-c", movePipes, command, ...args] };
}
