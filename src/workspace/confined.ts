import { type ChildProcessByStdio, spawn } from "node:child_process";
import { accessSync, closeSync, constants, existsSync, realpathSync } from "node:fs";
import { delimiter, join, sep } from "node:path";
import type { Readable, Writable } from "node:stream";
import type { Config } from "../config/config.ts";
import {
	confinedByConfig,
	holdingArgs,
	secretFiles,
	shownBySystem,
	systemView,
	viewEnd,
} from "../sessions/process/index.ts";
import { operatorAgentDir } from "../sessions/relay/index.ts";
import { openCheckedFolder } from "../shared/paths.ts";

/**
 * The gateway's own tools (git for changes, ripgrep for search) on the agent's bytes, inside
 * bubblewrap like pi: the session's folder read-only, bound from a descriptor checked to be the
 * folder (no gap between the check and the mount), only what the tool writes (the shadow git dir)
 * writable, the system's allowlist read-only as pi sees it (sandbox-view.ts: not the operator's
 * home, /root, /var or /etc's secrets) with the gateway's data dir, the workspace root, the
 * operator's pi agent dir and /tmp hidden under empty tmpfs, no network, no environment but the tool's own, and a bound on
 * memory. Time and output stay bounded by the caller, as before. With --sandbox off the tool runs
 * directly: what it is told (git's flags, rg's arguments) is then the only layer. Where bubblewrap
 * is missing or does not hold and the operator did not say off, no tool runs (503 sandbox_unavailable).
 */
export interface Confinement {
	/** bwrap around each tool; false: the tool runs directly (--sandbox off only). */
	sandbox: boolean;
	/** Why no tool may run at all: the sandbox was asked for and does not hold (fail closed). */
	unavailable?: Error;
	/** Folders hidden under an empty tmpfs (those that exist when a tool starts). */
	hide: string[];
	/** Files covered by /dev/null wherever they lie (the token file, the keys file). */
	cover: string[];
}

export interface Tool {
	command: string;
	args: string[];
	/**
	 * The folder the tool reads, and its cwd: a real path. Confined, it is opened (O_NOFOLLOW), the
	 * kernel is asked what the descriptor is, and bwrap binds that descriptor read-only.
	 */
	folder: string;
	/** Folders it writes, bound read-write (they must exist). */
	writable?: string[];
	/** Its whole environment. */
	env: Record<string, string>;
	/** Its address space at most (default 2 GiB). */
	memoryBytes?: number;
	/**
	 * Paths inside the folder ("/"-separated, relative) covered by /dev/null in the tool's view:
	 * FIFOs the tool would block on (a `.gitattributes` FIFO held every git add to its deadline).
	 * bwrap resolves them in the sandbox's own view, never on the host.
	 */
	covered?: string[];
	/** Its stdin (none when absent). */
	input?: Uint8Array;
}

const defaultMemoryBytes = 2 * 1024 * 1024 * 1024;
/** The folder's descriptor in the child (after stdin, stdout, stderr). */
const folderFd = 3;

/**
 * As sandbox.ts's baseArgs (see there why each holds as root: no capability, a user namespace of
 * its own, none nested), plus no network, no IPC and no host name of the host's: a tool needs none.
 */
const baseArgs = [
	...holdingArgs,
	// One capability back: read and list whatever the folder holds, whatever its mode. An agent
	// that made a folder 111, 000 or 444 hid the writes in it from "what changed", or stopped every
	// snapshot (an attacker's review). It opens nothing the tool could not read as its owner (the
	// gateway's user owns the folder); it is a capability of the sandbox's own user namespace, over
	// files whose owner and group are mapped there; and it writes nothing.
	"--cap-add",
	"CAP_DAC_READ_SEARCH",
	"--unshare-net",
	"--unshare-ipc",
	"--unshare-uts",
];

/**
 * The confinement a gateway's config asks for: `--sandbox on`/`off` as the server resolved it at
 * start; `auto` (unresolved: the sandbox was unavailable, or a gateway made without the server's
 * start) by the same probe pi's children get.
 */
export function confinementOf(
	config: Pick<
		Config,
		| "sandbox"
		| "dataDir"
		| "workspaceRoot"
		| "tokenFile"
		| "keysFile"
		| "databaseUrlFile"
		| "clusterSecretFile"
		| "webhooksFile"
		| "configFile"
		| "piAgentDir"
	>,
): Confinement {
	let sandbox = false;
	let unavailable: Error | undefined;
	try {
		sandbox = confinedByConfig(config);
	} catch (error) {
		unavailable = error as Error;
	}
	return {
		sandbox,
		unavailable,
		// The operator's pi agent dir too (its models.json and auth.json), where a folder holds it.
		hide: ["/tmp", config.workspaceRoot, config.dataDir, operatorAgentDir(config)],
		cover: secretFiles(config),
	};
}

let prlimitPath: string | null | undefined;
function findPrlimit(): string | undefined {
	if (prlimitPath === undefined) {
		prlimitPath = null;
		for (const dir of ["/usr/bin", "/bin", ...(process.env.PATH ?? "").split(delimiter).filter(Boolean)]) {
			try {
				accessSync(join(dir, "prlimit"), constants.X_OK);
				prlimitPath = join(dir, "prlimit");
				break;
			} catch {}
		}
	}
	return prlimitPath ?? undefined;
}

/** The command with its address space bounded: util-linux prlimit, else the shell's ulimit. */
function bounded(tool: Tool): string[] {
	const bytes = tool.memoryBytes ?? defaultMemoryBytes;
	const prlimit = findPrlimit();
	if (prlimit) return [prlimit, `--as=${bytes}:${bytes}`, "--", tool.command, ...tool.args];
	return ["/bin/sh", "-c", `ulimit -v ${Math.ceil(bytes / 1024)} && exec "$@"`, "sh", tool.command, ...tool.args];
}

const depth = (path: string) => path.split(sep).filter(Boolean).length;
const inside = (root: string, path: string) => path === root || path.startsWith(root + sep);

/** bwrap's argv for one tool whose folder is open as descriptor `folderFd`. */
export function confinedArgs(confinement: Confinement, tool: Tool): string[] {
	type Mount = { path: string; kind: "hide" | "folder" | "rw" | "ro" | "null" };
	const mounts: Mount[] = [];
	for (const path of confinement.hide) if (existsSync(path)) mounts.push({ path: realpathSync(path), kind: "hide" });
	mounts.push({ path: tool.folder, kind: "folder" });
	for (const path of tool.writable ?? []) mounts.push({ path: realpathSync(path), kind: "rw" });
	// The tool itself where the system's view does not show it (an rg in ~/.cargo/bin, say).
	if (tool.command.startsWith(sep) && existsSync(tool.command) && !shownBySystem(realpathSync(tool.command)))
		mounts.push({ path: tool.command, kind: "ro" });
	for (const file of confinement.cover) if (existsSync(file)) mounts.push({ path: realpathSync(file), kind: "null" });
	for (const rel of tool.covered ?? []) mounts.push({ path: `${tool.folder}/${rel}`, kind: "null" });
	// Mounts apply in order: a hide first, then what is put back below it (as sandbox.ts).
	const order = { hide: 0, folder: 1, rw: 1, ro: 1, null: 2 };
	mounts.sort((a, b) => depth(a.path) - depth(b.path) || order[a.kind] - order[b.kind]);
	const args = [...baseArgs, ...systemView()];
	for (const { path, kind } of mounts) {
		if (kind === "hide") args.push("--tmpfs", path);
		else if (kind === "folder") args.push("--ro-bind-fd", String(folderFd), path);
		else if (kind === "rw") args.push("--bind", path, path);
		else if (kind === "ro") args.push("--ro-bind", path, path);
		// A covered file under a hide (and not under what is put back) is gone already.
		else if (!hiddenAlready(mounts, path)) args.push("--ro-bind", "/dev/null", path);
	}
	args.push(...viewEnd, "--chdir", tool.folder, "--", ...bounded(tool));
	return args;
}

const hiddenAlready = (mounts: { path: string; kind: string }[], path: string) =>
	mounts.some((m) => m.kind === "hide" && inside(m.path, path)) &&
	!mounts.some((m) => (m.kind === "folder" || m.kind === "rw") && inside(m.path, path));

export type ToolProcess = ChildProcessByStdio<Writable | null, Readable, Readable>;

/**
 * Starts `tool` confined (or directly, when `confinement` says no sandbox or is absent). Throws,
 * before anything runs, when the folder's descriptor is not `tool.folder`. Synchronous on purpose:
 * the caller attaches its listeners before the event loop runs again (an await on the descriptor's
 * close here once let a quick tool's exit go by unheard, and its git wait for its deadline).
 */
export function spawnConfined(confinement: Confinement | undefined, tool: Tool): ToolProcess {
	if (confinement?.unavailable) throw confinement.unavailable;
	if (!confinement?.sandbox) {
		const [command, ...args] = bounded(tool);
		return spawn(command as string, args, {
			cwd: tool.folder,
			env: tool.env,
			stdio: [tool.input ? "pipe" : "ignore", "pipe", "pipe"],
		}) as ToolProcess;
	}
	// The one check pi's sandbox uses too: 409 folder_replaced when the folder is not what it was.
	const fd = openCheckedFolder(tool.folder, tool.folder);
	try {
		// The descriptor goes to bwrap as its fd 3; spawn has duplicated it when it returns.
		return spawn("bwrap", confinedArgs(confinement, tool), {
			env: tool.env,
			stdio: [tool.input ? "pipe" : "ignore", "pipe", "pipe", fd],
		}) as ToolProcess;
	} finally {
		closeSync(fd);
	}
}
