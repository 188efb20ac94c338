import { existsSync, lstatSync, readdirSync, readlinkSync, realpathSync } from "node:fs";
import { basename, dirname, isAbsolute, join, relative } from "node:path";
import { z } from "@hono/zod-openapi";
import type { Config } from "../../config/config.ts";
import { type ReadableGuard, readableProblem } from "../../config/layout-check.ts";
import { ownKeyFiles } from "../../config/own-keys.ts";
import { GatewayError } from "../../shared/errors.ts";
import { operatorAgentDir } from "../relay/index.ts";

/**
 * What a sandbox shows of the host (pi's and the workspace's confined tools alike): an allowlist,
 * built from what exists, on an empty root. Measured on the old view (`--ro-bind / /` with a few
 * hides), an agent run as root read /etc/shadow, listed /root and read a config file holding the
 * gateway's token; as an ordinary user it would read ~/.ssh, ~/.aws and every project.
 *
 * Shown: the system's programs and libraries (/usr, /bin, /sbin, /lib*, each link kept a link), the
 * parts of /etc a shell, users, DNS, TLS, the dynamic linker, locale, alternatives and the usual
 * tools read (`etcShown`), a fresh /dev and /proc. sandbox.ts adds what the session needs (its
 * folder, pi's agent dir and session folder, pi and its node, the operator's extras); nothing else
 * (the operator's home, /root, /home, /var, /srv, /opt, /mnt, /run, /sys) exists inside.
 */
const systemRoots = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/**
 * /etc, entry by entry: nothing that holds a secret (shadow, gshadow, ssh/, ssl/private, sudoers,
 * other services' folders, npmrc and pip.conf, which may hold a registry's token). An operator
 * adds what a tool of theirs needs with --sandbox-readable.
 */
export const etcShown = [
	...["passwd", "group", "nsswitch.conf", "hosts", "host.conf", "resolv.conf", "gai.conf", "hostname"],
	...["services", "protocols", "networks", "ethertypes", "rpc"],
	...["ssl/certs", "ssl/openssl.cnf", "ca-certificates", "ca-certificates.conf"],
	...["pki/tls/certs", "pki/ca-trust", "crypto-policies"],
	...["ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives"],
	...["localtime", "timezone", "locale.alias", "locale.conf", "default/locale"],
	...["profile", "profile.d", "bash.bashrc", "bashrc", "inputrc", "shells", "environment", "terminfo"],
	...["gitconfig", "magic", "magic.mime", "mime.types", "mtab", "os-release", "lsb-release", "debian_version"],
	...["perl", "vimrc", "vim", "xdg/user-dirs.defaults"],
];

/** /etc/python3, /etc/python3.11, …: Debian's python links its sitecustomize from there. */
const etcPattern = /^python3(\.\d+)?$/;

/** True when `child` (already real) is `root` or lies below it (spawn.ts's, which imports this module). */
function isInside(root: string, child: string): boolean {
	const rel = relative(root, child);
	return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/** A place in the view: a host path bound read-only, or a link written as the host has it. */
type Entry = { path: string; source: string } | { path: string; link: string };

/** Whether a host path (real) is shown by the system part of the view. */
export function shownBySystem(real: string): boolean {
	if (["/proc", "/dev"].some((root) => isInside(root, real))) return true;
	return systemEntries().some((e) => "source" in e && isInside(e.source, real));
}

/** A link to somewhere shown stays a link; one to elsewhere (resolv.conf into /run) shows its target's content. */
function entryOf(path: string, shown: (real: string) => boolean): Entry | undefined {
	let isLink: boolean;
	try {
		isLink = lstatSync(path).isSymbolicLink();
	} catch {
		return undefined;
	}
	if (!isLink) return { path, source: path };
	let real: string;
	try {
		real = realpathSync(path);
	} catch {
		return undefined; // a dangling link shows nothing
	}
	return shown(real) ? { path, link: readlinkSync(path) } : { path, source: real };
}

function etcNames(): string[] {
	let extra: string[] = [];
	try {
		extra = readdirSync("/etc").filter((name) => etcPattern.test(name));
	} catch {}
	return [...etcShown, ...extra];
}

/** The system part, from what exists now (a few lstat calls: cheap next to starting bwrap). */
function systemEntries(): Entry[] {
	const entries: Entry[] = [];
	const roots = systemRoots.map((p) => entryOf(p, () => true)).filter((e): e is Entry => e !== undefined);
	entries.push(...roots);
	const inSystem = (real: string) =>
		["/proc", "/dev"].some((r) => isInside(r, real)) ||
		roots.some((e) => "source" in e && isInside(e.source, real)) ||
		(isInside("/etc", real) && etcNames().some((n) => isInside(join("/etc", n), real)));
	for (const name of etcNames()) {
		const entry = entryOf(join("/etc", name), inSystem);
		if (entry) entries.push(entry);
	}
	return entries;
}

/**
 * bwrap's argv for the system part: fresh /dev and /proc, the roots and /etc's entries (folders
 * made 0755 on the way, as the host has them). Callers add their own mounts after, then
 * `viewEnd` (the empty root read-only).
 */
export function systemView(): string[] {
	const args = ["--dev", "/dev", "--proc", "/proc", "--dir", "/etc"];
	const made = new Set(["/etc"]);
	for (const entry of systemEntries()) {
		for (let dir = dirname(entry.path); dir !== "/" && !made.has(dir); dir = dirname(dir)) {
			made.add(dir);
			args.push("--dir", dir);
		}
		if ("link" in entry) args.push("--symlink", entry.link, entry.path);
		else args.push("--ro-bind", entry.source, entry.path);
	}
	return args;
}

/** Last: the root bwrap made (where the mount points are) read-only, so nothing is written beside them. */
export const viewEnd = ["--remount-ro", "/"];

/**
 * The node the gateway runs on, for the agent's tools (`node script.js`; pi itself runs from the
 * sealed copy, sealed-node.ts), when the system part does not show it already: what to show (its
 * install, npm included, when it is one: `<prefix>/bin/node` beside `<prefix>/lib/node_modules/npm`;
 * else the binary) and the folder to put on PATH.
 */
export function gatewayNode(): { show: string; bin: string } | undefined {
	const real = realpathSync(process.execPath);
	if (shownBySystem(real)) return undefined;
	const bin = dirname(real);
	const prefix = dirname(bin);
	const install = basename(bin) === "bin" && existsSync(join(prefix, "lib", "node_modules", "npm"));
	return { show: install ? prefix : real, bin };
}

/**
 * The files the gateway reads a secret from, those that exist: the token file, the keys file (only
 * hashes, but who holds which scopes is not the agent's business), the database URL's (its
 * password), the cluster secret's, the webhooks' (their signing secrets) and the config file (it
 * may hold any of them, `token:` included), and the files principals' own provider keys are read
 * from (config/own-keys.ts). pi's sandbox and the workspace's tools cover each.
 */
export function secretFiles(
	config: Pick<
		Config,
		"tokenFile" | "keysFile" | "databaseUrlFile" | "clusterSecretFile" | "webhooksFile" | "configFile"
	>,
): string[] {
	const { tokenFile, keysFile, databaseUrlFile, clusterSecretFile, webhooksFile, configFile } = config;
	return [tokenFile, keysFile, databaseUrlFile, clusterSecretFile, webhooksFile, configFile]
		.filter((file): file is string => file !== undefined && existsSync(file))
		.concat(ownKeyFiles(keysFile));
}

/**
 * The HOME a sandboxed pi and its tools get: the gateway's own path (so --sandbox-writable ~/.npm
 * still lands there) shown as an empty tmpfs, never the operator's files; /tmp when that path is
 * not one a tmpfs can go on (none, /, or inside what the system part shows).
 */
export function sandboxHome(home: string | undefined): string {
	const ok = home !== undefined && isAbsolute(home) && home !== "/" && !shownBySystem(home);
	return ok && !isInside("/etc", home) ? home : "/tmp";
}

/** The environment of a sandboxed pi: TMPDIR its private /tmp, HOME an empty one, the gateway's node on PATH. */
export function sandboxEnv(env: Record<string, string>): void {
	env.TMPDIR = "/tmp";
	env.HOME = sandboxHome(env.HOME);
	const node = gatewayNode();
	if (node && !(env.PATH ?? "").split(":").includes(node.bin))
		env.PATH = [env.PATH, node.bin].filter(Boolean).join(":");
}

/** The guard for paths shown read-only beside the allowlist (layout-check.ts readableProblem). */
export function readableGuard(config: Config): ReadableGuard {
	return {
		dataDir: config.dataDir,
		workspaceRoot: config.workspaceRoot,
		secrets: secretFiles(config),
		agentDir: operatorAgentDir(config),
		writable: config.sandboxWritable,
	};
}

/** The create body's `sandboxReadable`. */
export const SandboxReadable = z
	.array(
		z
			.string()
			.min(1)
			.max(4096)
			.regex(/^[^\0]*$/, "no NUL characters"),
	)
	.max(20)
	.openapi({
		description:
			"Host paths this session's sandbox shows read-only beside the system's allowlist (docs/security.md), checked at each start: absolute and existing (400 path_not_found), never the data dir, a file the gateway reads a secret from or the workspace root, nor a folder holding one, nor a folder agents write (the workspace root, --sandbox-writable) (403 path_not_allowed). Only an admin may name paths (403 for other principals; the operator shows paths to every session with --sandbox-readable)",
		example: ["/srv/datasets"],
	});

/**
 * A session's own extra read-only paths (the create body's `sandboxReadable`), checked at each
 * start: real paths, each passing readableProblem for the session's area. 400 path_not_found for a
 * missing one, 403 path_not_allowed for the rest.
 */
export function sessionReadable(
	config: Config,
	paths: string[] | undefined,
	area: { path: string; admin: boolean },
): string[] {
	return (paths ?? []).map((path) => {
		const problem = readableProblem(path, { ...readableGuard(config), area });
		if (problem?.missing) throw new GatewayError(400, "path_not_found", `sandboxReadable: ${problem.detail}`);
		if (problem) throw new GatewayError(403, "path_not_allowed", `sandboxReadable: ${problem.detail}`);
		return realpathSync(path);
	});
}
